import type { Kysely, Transaction } from 'kysely'
import { isTransientConflict } from './failures.js'
import type { Database } from './schema.js'

/** How often a transaction that lost a race (deadlock, serialization failure) is tried. */
const MAX_ATTEMPTS = 4

// A transaction is a new Kysely object each time; what was compiled for its database holds for it.
const rootOf = new WeakMap<Kysely<Database>, Kysely<Database>>()

/** The database handle `db` belongs to: itself, or the database a transaction was opened on. */
export function databaseOf(db: Kysely<Database>): Kysely<Database> {
  return rootOf.get(db) ?? db
}

/**
 * Runs `work` in a transaction, and again (a bounded number of times, after a short random pause)
 * when the database reports a deadlock or a serialization failure, so a lost race
 * never reaches the client. `work` must only touch the database: a rolled-back try leaves nothing.
 */
export async function inTransaction<T>(
  db: Kysely<Database>,
  work: (trx: Transaction<Database>) => Promise<T>,
): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await db.transaction().execute((trx) => {
        rootOf.set(trx, db)
        return work(trx)
      })
    } catch (error) {
      if (attempt >= MAX_ATTEMPTS || !isTransientConflict(error)) throw error
      // Jitter, so two transactions that deadlocked do not meet again in lockstep.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * attempt))
    }
  }
}
