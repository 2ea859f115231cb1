import type { FastifyBaseLogger } from 'fastify'
import type { Kysely } from 'kysely'
import { pruneAuditEvents } from '../audit/store.js'
import type { Clock } from '../clock.js'
import { tryAcquireLease } from '../db/leases.js'
import type { Database } from '../db/schema.js'
import { deleteFinishedMail } from '../mail/outbox.js'
import { deleteFinishedEvents } from '../events/outbox.js'
import { newId } from '../lib/secrets.js'
import type { Sessions } from '../sessions/service.js'
import { deleteExpiredCodesAndAttempts } from '../university/store.js'
import { createPeriodicJob, type PeriodicJob } from '../lib/periodic-job.js'

export interface PruneCounts {
  sessions: number
  /** University links past UNIVERSITY_LINK_MAX_AGE, lapsed and announced. */
  lapsedLinks: number
  codesAndAttempts: number
  mails: number
  auditEvents: number
  /** Webhook events every endpoint got (or that died) more than the retention ago. */
  webhookEvents: number
}

/** `runOnce` prunes if this instance holds the pruning lease, and returns `null` when another does. */
export type Pruner = PeriodicJob<PruneCounts | null>

export interface PrunerOptions {
  db: Kysely<Database>
  clock: Clock
  sessions: Sessions
  log: FastifyBaseLogger
  /** Deletes what the mail transport kept of pruned mails (the .eml files). */
  discardMail: (mailIds: readonly string[]) => Promise<void>
  intervalMs?: number
  /** How long delivered or abandoned mail rows (bodies already wiped) are kept for inspection. */
  mailRetentionMs?: number
  /** How long audit events are kept (AUDIT_RETENTION, default 90 days). */
  auditRetentionMs?: number
  /** How long finished webhook events are kept for `campusgate events replay` (30 days). */
  webhookRetentionMs?: number
  /** Told after each batch of expired sessions, for a progress line. */
  onProgress?: (counts: Partial<PruneCounts>) => void
}

const BATCH = 500

/**
 * Ends expired sessions the way logout does (even if their key is never presented again) and
 * deletes codes, attempts, mail rows and audit events that can no longer matter.
 */
export function createPruner(options: PrunerOptions): Pruner {
  const { db, clock, sessions, log } = options
  const intervalMs = options.intervalMs ?? 60_000
  const mailRetentionMs = options.mailRetentionMs ?? 7 * 86_400_000
  // As long as Stripe keeps events: a backend restored from a backup can be sent them again.
  const webhookRetentionMs = options.webhookRetentionMs ?? 30 * 86_400_000
  // Several instances share the database; the lease makes one of them prune per round.
  const holder = newId()

  async function prune(): Promise<PruneCounts | null> {
    const leased = await tryAcquireLease(
      db,
      { name: 'pruner', holder, ttlMs: intervalMs },
      clock.now().getTime(),
    )
    if (!leased) return null
    let ended = 0
    for (;;) {
      const batch = await sessions.endExpired(BATCH)
      ended += batch
      options.onProgress?.({ sessions: ended })
      if (batch < BATCH) break
    }
    let lapsedLinks = 0
    for (;;) {
      const batch = await sessions.lapseExpiredLinks(BATCH)
      lapsedLinks += batch
      if (batch < BATCH) break
    }
    const now = clock.now().getTime()
    const codesAndAttempts = await deleteExpiredCodesAndAttempts(db, now)
    const mailIds = await deleteFinishedMail(db, now - mailRetentionMs)
    await options.discardMail(mailIds)
    const auditEvents = await pruneAuditEvents(
      db,
      now - (options.auditRetentionMs ?? 90 * 86_400_000),
    )
    const webhookEvents = await deleteFinishedEvents(db, now - webhookRetentionMs)
    const counts = {
      sessions: ended,
      lapsedLinks,
      codesAndAttempts,
      mails: mailIds.length,
      auditEvents,
      webhookEvents,
    }
    if (Object.values(counts).some((count) => count > 0)) log.info({ pruned: counts }, 'pruned')
    return counts
  }

  return createPeriodicJob(prune, { intervalMs, log, name: 'pruning', runOnStart: false })
}
