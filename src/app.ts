import Fastify, { type FastifyInstance } from 'fastify'
import { accessRoutes } from './accounts/access-routes.js'
import type { Clock } from './clock.js'
import type { Config } from './config.js'
import type { Db } from './db/database.js'
import type { Cipher } from './lib/encryption.js'
import { consoleRoutes } from './console/routes/index.js'
import { registerErrorHandling } from './http/error-handler.js'
import { BODY_LIMIT_BYTES, mediaType } from './http/media-type.js'
import { openapi } from './http/openapi.js'
import { protocolEdgeOptions, answerOddRequests } from './http/protocol-edge.js'
import { rateLimits } from './http/rate-limit.js'
import { logCompletedRequests, requestLogging } from './http/request-log.js'
import { tierGuard } from './http/tier-guard.js'
import type { MailTransport } from './mail/transport.js'
import { apiDocs } from './operations/docs.js'
import { operationsRoutes } from './operations/routes.js'
import { pendingMigrations } from './db/migrate.js'
import { writeProbe } from './db/leases.js'
import { checkWrites } from './db/write-health.js'
import { newId } from './lib/secrets.js'
import { sandboxRoutes } from './sandbox/routes.js'
import { createServices, type Services } from './services.js'
import { introspectionRoutes } from './sessions/introspection.js'
import { sessionRoutes } from './sessions/routes.js'
import { universityRoutes } from './university/routes.js'
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

/** The app and its services (services.ts), whose background jobs start when the app is ready and stop when it closes. */
export interface Campusgate extends Services {
  app: FastifyInstance
  /** From now on /readyz answers 503: the process is stopping (docs/operations.md, "Stopping"). */
  stopBeingReady: () => void
}

function trustProxyOption(
  value: Config['server']['trustProxy'],
): false | string[] | ((address: string, hop: number) => boolean) {
  // A number is a hop count: trust the TCP peer and the entries it and the proxies before it
  // appended, counted from the right of X-Forwarded-For; whatever the client wrote stays left.
  return typeof value === 'number' ? (_address, hop) => hop < value : value
}

/**
 * `TRUST_PROXY=… via NAME`: the gateway names the client in its own header, so that header is
 * what the trusted proxies' rule reads (Fastify reads `X-Forwarded-For`), and an
 * `X-Forwarded-For` of the request's own is never believed. Added first, before any hook asks
 * for `request.ip`.
 */
function readClientAddressFrom(app: FastifyInstance, header: string | null): void {
  if (header === null) return
  app.addHook('onRequest', (request, _reply, done) => {
    const headers = request.raw.headers
    const named = headers[header]
    if (named === undefined) delete headers['x-forwarded-for']
    else headers['x-forwarded-for'] = Array.isArray(named) ? named.join(', ') : named
    done()
  })
}

/** Builds the whole HTTP service: every plugin and route, in the order requests meet them. */
export async function buildApp(deps: AppDeps): Promise<Campusgate> {
  const { config, db, clock } = deps
  const app = Fastify({
    ...requestLogging(config.operations.logLevel, deps.logStream),
    bodyLimit: BODY_LIMIT_BYTES,
    trustProxy: trustProxyOption(config.server.trustProxy),
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } },
    routerOptions: { ignoreTrailingSlash: false },
    ...protocolEdgeOptions(config.server.requestTimeoutMs),
  })
  readClientAddressFrom(app, config.server.clientAddressHeader)
  logCompletedRequests(app)
  answerOddRequests(app)

  // Names this instance in the rows it writes for itself (the write probe).
  const instanceId = newId()
  const services = createServices({ ...deps, log: app.log })
  const { metrics, sessions, messenger, university, mailbox } = services
  app.addHook('onReady', () => services.start())
  app.addHook('onClose', () => services.close())

  db.onConnectionError((error) =>
    app.log.warn({ err: error }, 'database connection lost; the pool reconnects on demand'),
  )
  registerErrorHandling(app)
  await app.register(openapi, {
    version: VERSION,
    publicBaseUrl: config.server.publicBaseUrl,
    metricsToken: config.operations.metricsToken !== null,
    backendCredentials: config.backends.credentials.size > 0,
  })
  // First of the hooks: a request without a session key is counted before anything else; the tier
  // guard counts the others against their session (valid key) or address (see rate-limit.ts).
  await app.register(rateLimits, {
    limits: config.rateLimit,
    perBackendMax: config.backends.perBackendMax,
    redisUrl: config.database.redisUrl,
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

  let stopping = false
  async function checkReady(): Promise<void> {
    if (stopping) throw new Error('stopping: a stop signal was received')
    const pending = await pendingMigrations(db)
    if (pending.length > 0) throw new Error(`schema behind: ${pending.join(', ')} not applied`)
    // Reads work on a full disk: whether writes do is what the last writes showed.
    await checkWrites(db.writes, () => writeProbe(db.kysely, instanceId, clock.now().getTime()))
  }
  operationsRoutes(app, {
    metrics,
    metricsToken: config.operations.metricsToken,
    logLevel: config.operations.logLevel,
    checkReady,
  })

  await app.register(tierGuard, { sessions })

  await app.register(async (routes) => sessionRoutes(routes, { sessions, messenger }))
  await app.register(async (routes) => accessRoutes(routes, services))
  // Unset BACKEND_CREDENTIALS: no route, so POST /introspect is an unknown endpoint.
  if (config.backends.credentials.size > 0) {
    const { credentials } = config.backends
    await app.register(async (routes) => introspectionRoutes(routes, { sessions, credentials }))
  }

  await app.register(async (routes) =>
    universityRoutes(routes, {
      university,
      publicBaseUrl: config.server.publicBaseUrl,
    }),
  )
  if (config.sandbox.messenger || config.sandbox.university) {
    const samlSpEntityId = config.university.saml?.spEntityId
    sandboxRoutes(app, {
      mailbox,
      ...config.sandbox,
      messengerApps: config.messenger.appPlatforms,
      universityProtocol: config.university.protocol,
      clientId: config.university.clientId,
      clientSecret: config.university.clientSecret,
      callbackUrl: () => `${config.server.publicBaseUrl}/authorize/university/callback`,
      ...(samlSpEntityId === undefined ? {} : { samlSpEntityId: () => samlSpEntityId }),
      clock,
    })
  }

  if (config.console.enabled) {
    await consoleRoutes(app, {
      ...services,
      publicBaseUrl: config.server.publicBaseUrl,
      operators: config.console.operators,
      db: db.kysely,
      clock,
      linkMaxAgeMs: config.university.linkMaxAgeMs,
      checkReady,
      newestBackupAt: services.backups === null ? null : () => services.backups!.newestAt(),
    })
  }

  app.get('/openapi.json', { schema: { hide: true } }, () => app.swagger())
  await app.register(apiDocs)

  const stopBeingReady = (): void => {
    stopping = true
  }
  return { ...services, app, stopBeingReady }
}
