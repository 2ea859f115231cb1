import { createAccountChanges, type AccountChanges } from './accounts/changes.js'
import { createAccessRequests, type AccessRequests } from './accounts/access.js'
import { createAccounts, type Accounts } from './accounts/users.js'
import { createAudit, createAuditTrail, type Audit, type AuditTrail } from './audit/audit.js'
import { securityConfigurationEvents } from './audit/configuration.js'
import { createBackupSchedule, type BackupSchedule } from './backup/schedule.js'
import type { ServicesDeps } from './composition/deps.js'
import { backgroundJobs } from './composition/jobs.js'
import { composeMail } from './composition/mail.js'
import { composeMessenger } from './composition/messenger.js'
import { composeUniversity } from './composition/university.js'
import { composeWebhooks } from './composition/webhooks.js'
import { createConsoleSessions, type ConsoleSessions } from './console/service.js'
import type { Events } from './events/emitter.js'
import { deliveryStats } from './events/outbox.js'
import type { WebhookEvents } from './events/service.js'
import type { WebhookWorker } from './events/worker.js'
import { outboxStats } from './mail/outbox.js'
import type { Outbox } from './mail/outbox-service.js'
import type { MailWorker } from './mail/worker.js'
import { createPruner, type Pruner } from './maintenance/pruner.js'
import type { MessengerClient } from './messenger/client.js'
import { createMetrics, type Metrics } from './operations/metrics.js'
import { createOriginalImport, type OriginalImport } from './original/service.js'
import type { SandboxMailbox } from './sandbox/mailbox.js'
import { createSessions, type Sessions } from './sessions/service.js'
import { createSessionStore } from './sessions/store.js'
import type { TouchRule } from './sessions/touch-rule.js'
import type { OidcClient } from './university/oidc-client.js'
import type { University } from './university/service.js'
import { readBuildInfo } from './operations/build-info.js'

export type { ServicesDeps }

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

export function createServices(deps: ServicesDeps): Services {
  const { config, db, clock, cipher, log } = deps
  const rule: TouchRule = {
    ttlMs: config.sessions.ttlMs,
    intervalMs: config.sessions.touchIntervalMs,
    maxAgeMs: config.sessions.maxAgeMs,
  }
  const sessionStore = createSessionStore(db, rule, clock)
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
    build: readBuildInfo(),
    clock,
    outboxStats: () => outboxStats(db.kysely),
    webhookStats: config.webhook.endpoints.length > 0 ? () => deliveryStats(db.kysely) : null,
    ...(backups === null ? {} : { newestBackupAt: async () => backups.newestAt() }),
    writeImpaired: () => db.writes.fault !== null,
    sessionStats: () => sessionStore.liveCounts(),
  })
  const audit = createAudit({
    clock,
    onRecorded: (event) => metrics.auditEvent(event.type, event.detail),
  })
  const mail = composeMail(deps, metrics)
  const webhooks = composeWebhooks(deps, metrics)
  const changes = createAccountChanges({
    db: db.kysely,
    clock,
    audit,
    events: webhooks.events,
    // A command line has no worker: what it emits waits in the database for a running service's.
    wake: () => webhooks.worker?.kick(),
    wakeMail: () => mail.worker.kick(),
    discardMail: mail.discard,
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
  const messenger = composeMessenger(deps, metrics)
  const pruner = createPruner({
    db: db.kysely,
    clock,
    sessions,
    discardMail: mail.discard,
    log: log.child({ component: 'pruner' }),
    auditRetentionMs: config.operations.auditRetentionMs,
    ...(deps.onPruneProgress === undefined ? {} : { onProgress: deps.onPruneProgress }),
  })
  const { university, consoleOidc } = composeUniversity(deps, { metrics, audit, changes })
  const accounts = createAccounts({ db: db.kysely, sessions, outbox: mail.outbox, changes })
  const originalImport = createOriginalImport({
    db: db.kysely,
    clock,
    cipher,
    ttlMs: config.sessions.ttlMs,
    changes,
    sessions: sessionStore,
  })
  const jobs = backgroundJobs(deps, {
    jobs: [mail.worker, pruner, ...(webhooks.worker === null ? [] : [webhooks.worker])],
    backups,
  })

  return {
    metrics,
    audit,
    auditTrail: createAuditTrail(db.kysely),
    sessions,
    university,
    messenger,
    outbox: mail.outbox,
    accounts,
    access: createAccessRequests({ db: db.kysely, clock, audit, sessions }),
    changes,
    mailWorker: mail.worker,
    events: webhooks.events,
    webhookEvents: webhooks.webhookEvents,
    webhookWorker: webhooks.worker,
    pruner,
    originalImport,
    backups,
    mailbox: mail.mailbox,
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
      mail.transport.close()
    },
  }
}
