import Fastify, { type FastifyInstance } from 'fastify'
import type { Clock } from './clock.js'
import type { Config } from './config.js'
import type { Db } from './db/database.js'
import type { Cipher } from './lib/encryption.js'
import { registerErrorHandling } from './http/error-handler.js'
import { BODY_LIMIT_BYTES, mediaType } from './http/media-type.js'
import { openapi } from './http/openapi.js'
import { protocolEdgeOptions, answerOddRequests } from './http/protocol-edge.js'
import { rateLimits } from './http/rate-limit.js'
import { logCompletedRequests, requestLogging } from './http/request-log.js'
import { tierGuard } from './http/tier-guard.js'
import { createMailTransport, type MailTransport } from './mail/transport.js'
import { createMailWorker, type MailWorker } from './mail/worker.js'
import { createPruner, type Pruner } from './maintenance/pruner.js'
import { createMessengerClient } from './messenger/client.js'
import { apiDocs } from './operations/docs.js'
import { createMetrics, timedFetch, type Metrics } from './operations/metrics.js'
import { operationsRoutes } from './operations/routes.js'
import { outboxStats } from './mail/outbox.js'
import { pendingMigrations } from './db/migrate.js'
import { writeProbe } from './db/leases.js'
import { createBackupSchedule, type BackupSchedule } from './backup/schedule.js'
import { checkWrites } from './db/write-health.js'
import { newId } from './lib/secrets.js'
import { createAudit } from './audit/audit.js'
import { securityConfigurationEvents } from './audit/configuration.js'
import { stringOrUndefined } from './lib/coerce.js'
import { createSandboxMailbox } from './sandbox/mailbox.js'
import { sandboxRoutes } from './sandbox/routes.js'
import { sessionRoutes } from './sessions/routes.js'
import { createSessions, type Sessions } from './sessions/service.js'
import { createUniversityClient } from './university/client.js'
import { universityRoutes } from './university/routes.js'
import { createOidcClient } from './university/oidc-client.js'
import { createUniversity } from './university/service.js'
import { VERSION } from './version.js'

export interface AppDeps {
  config: Config
  db: Db
  clock: Clock
  /** Encrypts the secrets campusgate must read back (see secrets-at-rest.ts). */
  cipher: Cipher
  /** Outbound HTTP for the identity provider clients. */
  fetch?: typeof fetch
  /** Where the JSON log lines go (default stdout); tests read them to prove no secret is logged. */
  logStream?: NodeJS.WritableStream
  /** Mail delivery; default from SMTP_URL (or .eml files). */
  mailTransport?: MailTransport
}

/** The app and its background jobs, which start when the app is ready and stop when it closes. */
export interface Campusgate {
  app: FastifyInstance
  sessions: Sessions
  mailWorker: MailWorker
  pruner: Pruner
  /** The service's own SQLite backups; null unless BACKUP_DIR and BACKUP_INTERVAL are set. */
  backups: BackupSchedule | null
  metrics: Metrics
}

function trustProxyOption(
  value: Config['trustProxy'],
): false | string[] | ((address: string, hop: number) => boolean) {
  // A number is a hop count: trust the TCP peer and the entries it and the proxies before it
  // appended, counted from the right of X-Forwarded-For; whatever the client wrote stays left.
  return typeof value === 'number' ? (_address, hop) => hop < value : value
}

/** Builds the whole HTTP service: every plugin and route, in the order requests meet them. */
export async function buildApp(deps: AppDeps): Promise<Campusgate> {
  const { config, db, clock } = deps
  const app = Fastify({
    ...requestLogging(config.logLevel, deps.logStream),
    bodyLimit: BODY_LIMIT_BYTES,
    trustProxy: trustProxyOption(config.trustProxy),
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } },
    routerOptions: { ignoreTrailingSlash: false },
    ...protocolEdgeOptions(config.requestTimeoutMs),
  })
  logCompletedRequests(app)
  answerOddRequests(app)

  // Names this instance in the rows it writes for itself (the write probe).
  const instanceId = newId()
  const backups =
    config.backups === null || db.sqlitePath === null
      ? null
      : createBackupSchedule({
          db: db.kysely,
          sqlitePath: db.sqlitePath,
          config: config.backups,
          clock,
          log: app.log.child({ component: 'backup' }),
        })
  const metrics = createMetrics({
    version: VERSION,
    clock,
    outboxStats: () => outboxStats(db.kysely),
    ...(backups === null ? {} : { newestBackupAt: async () => backups.newestAt() }),
    writeImpaired: () => db.writes.fault !== null,
  })
  const audit = createAudit({
    clock,
    onRecorded: (event) => metrics.auditEvent(event.type, stringOrUndefined(event.detail?.reason)),
  })
  const outbound = deps.fetch ?? fetch
  const sandboxed = config.sandbox.messenger || config.sandbox.university
  // In sandbox mode the playground reads the confirmation email back from the sandbox's mailbox.
  const mailbox = sandboxed ? createSandboxMailbox(() => clock.now()) : undefined
  const deliveringTransport =
    deps.mailTransport ??
    createMailTransport({
      smtpUrl: config.smtpUrl,
      outboxDir: config.outboxDir,
      from: config.mailFrom,
    })
  const mailTransport = mailbox?.keeping(deliveringTransport) ?? deliveringTransport
  const discardMail = (mailIds: readonly string[]) => mailTransport.discard(mailIds)
  const sessions = createSessions({
    db: db.kysely,
    reader: db.reader,
    clock,
    cipher: deps.cipher,
    discardMail,
    ttlMs: config.sessionTtlMs,
    touchIntervalMs: config.sessionTouchIntervalMs,
    linkMaxAgeMs: config.university.linkMaxAgeMs,
    audit,
  })
  const messenger = createMessengerClient({
    ...config.messenger,
    onCall: (answered, seconds) => metrics.providerCall('messenger', answered, seconds),
  })
  const mailWorker = createMailWorker({
    db: db.kysely,
    dialect: db.dialect,
    clock,
    transport: mailTransport,
    cipher: deps.cipher,
    log: app.log.child({ component: 'mail-worker' }),
    onDelivery: (outcome) => metrics.mailDelivery(outcome),
  })
  const pruner = createPruner({
    db: db.kysely,
    clock,
    sessions,
    discardMail,
    log: app.log.child({ component: 'pruner' }),
    auditRetentionMs: config.auditRetentionMs,
  })
  const university = createUniversity({
    db: db.kysely,
    clock,
    client: createUniversityClient({
      ...config.university,
      fetch: timedFetch(outbound, 'university', metrics),
    }),
    oidc:
      config.university.protocol === 'oidc' && config.university.issuer !== null
        ? createOidcClient({
            ...config.university,
            issuer: config.university.issuer,
            redirectUri: `${config.publicBaseUrl}/authorize/university/callback`,
            // An http: issuer (a development provider, the sandbox) never in production.
            allowInsecureRequests: config.university.issuer.startsWith('http:'),
            clock,
            fetch: timedFetch(outbound, 'university', metrics),
          })
        : null,
    mailLimits: config.mailLimits,
    cipher: deps.cipher,
    log: app.log.child({ component: 'university' }),
    audit,
    onMailQueued: () => mailWorker.kick(),
    logLinks: config.smtpUrl === null,
    publicBaseUrl: config.publicBaseUrl,
    ...config.university,
    registrationCodeTtlMs: config.registrationCodeTtlMs,
  })
  app.addHook('onReady', async () => {
    // Best effort: a database that is down now must not keep the service (and /readyz) from starting.
    for (const event of securityConfigurationEvents(config)) {
      await audit.record(db.kysely, event).catch((error: unknown) => {
        app.log.warn({ err: error, setting: event.detail?.setting }, 'audit event not recorded')
      })
    }
    mailWorker.start()
    pruner.start()
    backups?.start()
  })
  app.addHook('onClose', async () => {
    await Promise.all([mailWorker.stop(), pruner.stop(), backups?.stop(), messenger.close()])
    mailTransport.close()
  })

  db.onConnectionError((error) =>
    app.log.warn({ err: error }, 'database connection lost; the pool reconnects on demand'),
  )
  registerErrorHandling(app)
  await app.register(openapi, {
    version: VERSION,
    publicBaseUrl: config.publicBaseUrl,
    metricsToken: config.metricsToken !== null,
  })
  // First of the hooks: a request without a session key is counted before anything else; the tier
  // guard counts the others against their session (valid key) or address (see rate-limit.ts).
  await app.register(rateLimits, {
    limits: config.rateLimit,
    redisUrl: config.redisUrl,
    onRefused: (limit) => metrics.rateLimitRefusal(limit),
  })
  await app.register(mediaType)
  app.addHook('onResponse', (request, reply, done) => {
    const { routeOptions } = request
    metrics.observeRequest(
      routeOptions.config,
      request.method,
      routeOptions.url,
      reply.statusCode,
      reply.elapsedTime / 1000,
    )
    done()
  })

  operationsRoutes(app, {
    metrics,
    metricsToken: config.metricsToken,
    logLevel: config.logLevel,
    async checkReady() {
      const pending = await pendingMigrations(db)
      if (pending.length > 0) throw new Error(`schema behind: ${pending.join(', ')} not applied`)
      // Reads work on a full disk: whether writes do is what the last writes showed.
      await checkWrites(db.writes, () => writeProbe(db.kysely, instanceId, clock.now().getTime()))
    },
  })

  await app.register(tierGuard, { sessions })

  await app.register(async (routes) => sessionRoutes(routes, { sessions, messenger }))

  await app.register(async (routes) =>
    universityRoutes(routes, {
      university,
      publicBaseUrl: config.publicBaseUrl,
    }),
  )
  if (sandboxed) {
    sandboxRoutes(app, {
      mailbox,
      ...config.sandbox,
      universityProtocol: config.university.protocol,
      clientId: config.university.clientId,
      clientSecret: config.university.clientSecret,
      callbackUrl: () => `${config.publicBaseUrl}/authorize/university/callback`,
      clock,
    })
  }

  app.get('/openapi.json', { schema: { hide: true } }, () => app.swagger())
  await app.register(apiDocs)

  return { app, sessions, mailWorker, pruner, backups, metrics }
}
