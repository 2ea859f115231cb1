import type { FastifyBaseLogger } from 'fastify'
import type { Clock } from './clock.js'
import type { Config } from './config.js'
import type { Db } from './db/database.js'
import type { Cipher } from './lib/encryption.js'
import { createAccountChanges, type AccountChanges } from './accounts/changes.js'
import { createAccessRequests, type AccessRequests } from './accounts/access.js'
import { createAccounts, type Accounts } from './accounts/users.js'
import { createBackupSchedule, type BackupSchedule } from './backup/schedule.js'
import { createConsoleSessions, type ConsoleSessions } from './console/service.js'
import { createWalCheckpoints } from './maintenance/wal-checkpoints.js'
import { createAudit, createAuditTrail, type Audit, type AuditTrail } from './audit/audit.js'
import { securityConfigurationEvents } from './audit/configuration.js'
import type { PeriodicJob } from './lib/periodic-job.js'
import { outboxStats } from './mail/outbox.js'
import { createOutbox, type Outbox } from './mail/outbox-service.js'
import { createMailTransport, type MailTransport } from './mail/transport.js'
import { createMailWorker, type MailWorker } from './mail/worker.js'
import { createEvents, type Events } from './events/emitter.js'
import { deliveryStats } from './events/outbox.js'
import { createWebhookEvents, type WebhookEvents } from './events/service.js'
import { createSigner } from './events/signer.js'
import { createWebhookWorker, type WebhookWorker } from './events/worker.js'
import { createPruner, type PruneCounts, type Pruner } from './maintenance/pruner.js'
import { createMessengerClient, type MessengerClient } from './messenger/client.js'
import { createMetrics, timedFetch, type Metrics } from './operations/metrics.js'
import { createOriginalImport, type OriginalImport } from './original/service.js'
import { createSandboxMailbox, type SandboxMailbox } from './sandbox/mailbox.js'
import { sandboxApps } from './sandbox/messenger.js'
import { createSessions, type Sessions } from './sessions/service.js'
import { createSessionStore } from './sessions/store.js'
import type { TouchRule } from './sessions/touch-rule.js'
import { createUniversityClient } from './university/client.js'
import { createOidcIssuer, type OidcClient } from './university/oidc-client.js'
import { createProtocol } from './university/protocols.js'
import { createUniversity, type University } from './university/service.js'
import { VERSION } from './version.js'

export interface ServicesDeps {
  config: Config
  db: Db
  clock: Clock
  /** Encrypts the secrets campusgate must read back (see secrets-at-rest.ts). */
  cipher: Cipher
  /** Where the services and background jobs log (the app's logger, or the command line's). */
  log: FastifyBaseLogger
  /** Outbound HTTP for the identity provider clients. */
  fetch?: typeof fetch
  /** Mail delivery; default from SMTP_URL (or .eml files). */
  mailTransport?: MailTransport
  /** Told after each batch of expired sessions the pruner ends, for a progress line. */
  onPruneProgress?: (counts: Partial<PruneCounts>) => void
}

/**
 * Every service of campusgate, built once from the configuration. The HTTP app (app.ts) and the
 * command line (cli/) both take their services from here, so a command changes things exactly
 * as a request does.
 */
export interface Services {
  metrics: Metrics
  audit: Audit
  auditTrail: AuditTrail
  sessions: Sessions
  university: University
  messenger: MessengerClient
  outbox: Outbox
  accounts: Accounts
  /** The right of access: what campusgate holds about a user, in one document. */
  access: AccessRequests
  /**
   * The unit of work for every account change (registration, logout, expiry, erasure, revocation,
   * a registration code, an attempt's end, link, unlink, lapse, import): the change, its audit
   * event and its lifecycle events in one transaction, the workers woken after the commit.
   */
  changes: AccountChanges
  mailWorker: MailWorker
  /** Where the lifecycle functions write their events (webhooks off: nothing). */
  events: Events
  /** The lifecycle events as the operator's commands use them. */
  webhookEvents: WebhookEvents
  /** Delivers the lifecycle events; null when WEBHOOK_URL is unset. */
  webhookWorker: WebhookWorker | null
  pruner: Pruner
  /** `campusgate import-original`: the original server's users, brought over with their keys. */
  originalImport: OriginalImport
  /** The service's own SQLite backups; null unless BACKUP_DIR and BACKUP_INTERVAL are set. */
  backups: BackupSchedule | null
  /** In sandbox mode: the mail the playground reads back. */
  mailbox: SandboxMailbox | undefined
  /** The operator console's sign-in links and sessions. */
  consoleSessions: ConsoleSessions
  /** The console's university sign-in (OIDC with CONSOLE_OPERATORS); null: links only. */
  consoleOidc: OidcClient | null
  /** Records the risky settings, then starts the background jobs (the app calls it when ready). */
  start(): Promise<void>
  /** Stops the background jobs and closes the outbound connections. */
  close(): Promise<void>
}

/**
 * How often a SQLite database's WAL is copied back into its file, off the event loop: a quarter
 * of a second of writes is at most a few thousand pages, well under the commits' safety net.
 */
const WAL_CHECKPOINT_INTERVAL_MS = 250

export function createServices(deps: ServicesDeps): Services {
  const { config, db, clock, cipher, log } = deps
  const backups =
    config.backups === null || db.sqlitePath === null
      ? null
      : createBackupSchedule({
          db: db.kysely,
          sqlitePath: db.sqlitePath,
          config: config.backups,
          clock,
          log: log.child({ component: 'backup' }),
        })
  const metrics = createMetrics({
    version: VERSION,
    clock,
    outboxStats: () => outboxStats(db.kysely),
    webhookStats: config.webhook.endpoints.length > 0 ? () => deliveryStats(db.kysely) : null,
    ...(backups === null ? {} : { newestBackupAt: async () => backups.newestAt() }),
    writeImpaired: () => db.writes.fault !== null,
    sessionStats: () => sessions.counts(),
  })
  const audit = createAudit({
    clock,
    onRecorded: (event) => metrics.auditEvent(event.type, event.detail),
  })
  const outbound = timedFetch(deps.fetch ?? fetch, 'university', metrics)
  const sandboxed = config.sandbox.messenger || config.sandbox.university
  // In sandbox mode the playground reads the confirmation email back from the sandbox's mailbox.
  const mailbox = sandboxed ? createSandboxMailbox(() => clock.now()) : undefined
  const deliveringTransport =
    deps.mailTransport ??
    createMailTransport({
      smtpUrl: config.mail.smtpUrl,
      outboxDir: config.mail.outboxDir,
      from: config.mail.from,
    })
  const mailTransport = mailbox?.keeping(deliveringTransport) ?? deliveringTransport
  const discardMail = (mailIds: readonly string[]) => mailTransport.discard(mailIds)
  const webhookWorker =
    config.webhook.endpoints.length > 0
      ? createWebhookWorker({
          db: db.kysely,
          dialect: db.dialect,
          clock,
          fetch: deps.fetch ?? fetch,
          sign: createSigner(config.webhook.secrets),
          tryTimeoutMs: config.webhook.tryTimeoutMs,
          pollIntervalMs: config.webhook.pollIntervalMs,
          log: log.child({ component: 'webhook-worker' }),
          onTry: (outcome) => metrics.webhookTry(outcome),
        })
      : null
  const events = createEvents({
    endpoints: config.webhook.endpoints,
    retryForMs: config.webhook.retryForMs,
  })
  const rule: TouchRule = {
    ttlMs: config.sessions.ttlMs,
    intervalMs: config.sessions.touchIntervalMs,
    maxAgeMs: config.sessions.maxAgeMs,
  }
  const sessionStore = createSessionStore(db, rule, clock)
  const mailWorker = createMailWorker({
    db: db.kysely,
    dialect: db.dialect,
    clock,
    transport: mailTransport,
    cipher,
    log: log.child({ component: 'mail-worker' }),
    onDelivery: (outcome) => metrics.mailDelivery(outcome),
  })
  const changes = createAccountChanges({
    db: db.kysely,
    clock,
    audit,
    events,
    // A command line has no worker: what it emits waits in the database for a running service's.
    wake: () => webhookWorker?.kick(),
    wakeMail: () => mailWorker.kick(),
    discardMail,
    registrations: db.groupedTransaction,
    sessions: { store: sessionStore, perUser: config.sessions.perUser, rule },
    linkByUnionId: config.messenger.linkByUnionId,
  })

  const sessions = createSessions({
    db: db.kysely,
    store: sessionStore,
    clock,
    cipher,
    rule,
    linkMaxAgeMs: config.university.linkMaxAgeMs,
    changes,
  })
  const messenger = createMessengerClient({
    ...config.messenger,
    appSecrets: {
      held: config.messenger.appSecrets,
      ...(config.sandbox.messenger
        ? {
            sandboxApps: new Map(
              [...sandboxApps(config.messenger.appPlatforms).values()].map((app) => [
                app.appId,
                app.appSecret,
              ]),
            ),
          }
        : {}),
    },
    onCall: (answered, seconds) => metrics.providerCall('messenger', answered, seconds),
    log: log.child({ component: 'messenger' }),
  })
  const pruner = createPruner({
    db: db.kysely,
    clock,
    sessions,
    discardMail,
    log: log.child({ component: 'pruner' }),
    auditRetentionMs: config.operations.auditRetentionMs,
    ...(deps.onPruneProgress === undefined ? {} : { onProgress: deps.onPruneProgress }),
  })
  // The university's OpenID Connect issuer, discovered once for tier 2 and the console's sign-in.
  const oidcIssuer =
    config.university.protocol === 'oidc' && config.university.issuer !== null
      ? createOidcIssuer({
          ...config.university,
          issuer: config.university.issuer,
          // An http: issuer (a development provider, the sandbox) never in production.
          allowInsecureRequests: config.university.issuer.startsWith('http:'),
          clock,
          fetch: outbound,
        })
      : null
  const university = createUniversity({
    db: db.kysely,
    clock,
    protocol: createProtocol({
      config: config.university,
      publicBaseUrl: config.server.publicBaseUrl,
      client: createUniversityClient({ ...config.university, fetch: outbound }),
      oidc:
        oidcIssuer?.client(`${config.server.publicBaseUrl}/authorize/university/callback`) ?? null,
      db: db.kysely,
      clock,
      fetch: outbound,
    }),
    mailLimits: config.mail.limits,
    cipher,
    log: log.child({ component: 'university' }),
    audit,
    logLinks: config.mail.smtpUrl === null,
    publicBaseUrl: config.server.publicBaseUrl,
    attemptTtlMs: config.university.attemptTtlMs,
    identityBinding: config.university.identityBinding,
    emailDomains: config.university.emailDomains,
    linkMaxAgeMs: config.university.linkMaxAgeMs,
    registrationCodeTtlMs: config.sessions.registrationCodeTtlMs,
    changes,
  })
  // A separate relying party for the console (its own redirect URI, state, nonce and PKCE) on the
  // same discovery.
  const consoleOidc =
    oidcIssuer !== null && config.console.enabled && config.console.operators.length > 0
      ? oidcIssuer.client(`${config.server.publicBaseUrl}/console/sign-in/university/callback`)
      : null
  const outbox = createOutbox({ db: db.kysely, clock, onDue: () => mailWorker.kick() })
  const accounts = createAccounts({ db: db.kysely, sessions, outbox, changes })
  const originalImport = createOriginalImport({
    db: db.kysely,
    clock,
    cipher,
    ttlMs: config.sessions.ttlMs,
    changes,
    sessions: sessionStore,
  })

  // The background jobs of every instance: started when the app is ready, stopped when it closes.
  // A new job is created above and listed here.
  const jobs: PeriodicJob<unknown>[] = [mailWorker, pruner]
  if (webhookWorker !== null) jobs.push(webhookWorker)
  if (backups !== null) jobs.push(backups)
  if (db.sqlitePath !== null) {
    jobs.push(
      createWalCheckpoints({
        db: db.kysely,
        sqlitePath: db.sqlitePath,
        intervalMs: WAL_CHECKPOINT_INTERVAL_MS,
        log: log.child({ component: 'wal-checkpoint' }),
      }),
    )
  }
  const webhookEvents = createWebhookEvents({
    db: db.kysely,
    clock,
    retryForMs: config.webhook.retryForMs,
    onDue: () => webhookWorker?.kick(),
  })

  return {
    metrics,
    audit,
    auditTrail: createAuditTrail(db.kysely),
    sessions,
    university,
    messenger,
    outbox,
    accounts,
    access: createAccessRequests({ db: db.kysely, clock, audit, sessions }),
    changes,
    mailWorker,
    events,
    webhookEvents,
    webhookWorker,
    pruner,
    originalImport,
    backups,
    mailbox,
    consoleSessions: createConsoleSessions({ db: db.kysely, clock, audit }),
    consoleOidc,
    async start() {
      // Best effort: a database that is down now must not keep the service (and /readyz) from starting.
      for (const event of securityConfigurationEvents(config)) {
        await audit.record(db.kysely, event).catch((error: unknown) => {
          log.warn({ err: error, setting: event.detail?.setting }, 'audit event not recorded')
        })
      }
      for (const job of jobs) job.start()
    },
    async close() {
      await Promise.all([...jobs.map((job) => job.stop()), messenger.close()])
      mailTransport.close()
    },
  }
}
