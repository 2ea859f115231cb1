import type { FastifyBaseLogger } from 'fastify'
import type { Kysely } from 'kysely'
import type { Clock } from '../clock.js'
import { tryAcquireLease } from '../db/leases.js'
import type { Database } from '../db/schema.js'
import { newId } from '../sessions/keys.js'
import type { Sessions } from '../sessions/service.js'
import { pruneUniversity } from '../university/store.js'

export interface PruneCounts {
  sessions: number
  codesAndAttempts: number
  mails: number
}

export interface Pruner {
  /** One pruning round, if this instance holds the pruning lease; `null` when another does. */
  runOnce(): Promise<PruneCounts | null>
  start(): void
  stop(): Promise<void>
}

export interface PrunerOptions {
  db: Kysely<Database>
  clock: Clock
  sessions: Sessions
  log: FastifyBaseLogger
  intervalMs?: number
  /** How long delivered or abandoned mail rows (bodies already wiped) are kept for inspection. */
  mailRetentionMs?: number
}

const BATCH = 500

/**
 * Ends expired sessions the way logout does (even if their key is never presented again) and
 * deletes codes, attempts and mail rows that can no longer matter.
 */
export function createPruner(options: PrunerOptions): Pruner {
  const { db, clock, sessions, log } = options
  const intervalMs = options.intervalMs ?? 60_000
  const mailRetentionMs = options.mailRetentionMs ?? 7 * 86_400_000
  let timer: NodeJS.Timeout | null = null
  let running: Promise<PruneCounts | null> | null = null
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
      if (batch < BATCH) break
    }
    const now = clock.now().getTime()
    const codesAndAttempts = await pruneUniversity(db, now)
    const mails = await db
      .deleteFrom('mail_outbox')
      .where((eb) => eb.or([eb('sent_at', 'is not', null), eb('abandoned_at', 'is not', null)]))
      .where('created_at', '<', now - mailRetentionMs)
      .executeTakeFirst()
    const counts = { sessions: ended, codesAndAttempts, mails: Number(mails.numDeletedRows) }
    if (counts.sessions + counts.codesAndAttempts + counts.mails > 0)
      log.info({ pruned: counts }, 'pruned')
    return counts
  }

  function runOnce(): Promise<PruneCounts | null> {
    running ??= prune().finally(() => (running = null))
    return running
  }

  return {
    runOnce,
    start() {
      timer = setInterval(() => {
        runOnce().catch((error: unknown) => log.error({ err: error }, 'pruning failed'))
      }, intervalMs)
      timer.unref()
    },
    async stop() {
      if (timer !== null) clearInterval(timer)
      timer = null
      await running?.catch(() => undefined)
    },
  }
}
