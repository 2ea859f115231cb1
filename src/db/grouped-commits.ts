import { sql, type Kysely, type Transaction } from 'kysely'
import type { Database } from './schema.js'
import { inTransaction } from './transaction.js'

/** Runs `work` in a transaction of its own, or in a savepoint of one shared with others. */
export type RunTransaction = <T>(work: (trx: Transaction<Database>) => Promise<T>) => Promise<T>

/** Bounds a group: more transactions in one turn make another group. */
export const GROUP_MAX = 32

interface Pending {
  work: (trx: Transaction<Database>) => Promise<unknown>
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown }

/**
 * For SQLite, whose commit is most of a registration's cost: every page the transaction changed
 * is written to the WAL, two system calls a page, one page at least per B-tree it touched. The
 * transactions handed in within one turn of the event loop (`setImmediate`) share one: each runs
 * in its own savepoint, and one that fails is rolled back to it alone, so each still commits all
 * or nothing (one alone in its turn runs as a plain transaction).
 * Every caller's promise settles after the shared COMMIT, never before: what it was told was
 * written is written, as with a transaction of its own. A failed COMMIT (a full disk) fails
 * every one of them.
 */
export function groupedCommits(db: Kysely<Database>): RunTransaction {
  let pending: Pending[] = []

  async function flush(): Promise<void> {
    const group = pending.slice(0, GROUP_MAX)
    pending = pending.slice(GROUP_MAX)
    if (pending.length > 0) setImmediate(() => void flush())
    if (group.length === 1) {
      // Alone in its turn (a touch between two others, a registration at a quiet hour): its own
      // transaction already makes it all or nothing, so no savepoint, two statements fewer.
      const [{ work, resolve, reject }] = group
      await inTransaction(db, work).then(resolve, reject)
      return
    }
    let outcomes: Outcome[] = []
    try {
      await inTransaction(db, async (trx) => {
        outcomes = []
        for (const { work } of group) {
          await sql`savepoint grouped`.execute(trx)
          try {
            outcomes.push({ ok: true, value: await work(trx) })
            await sql`release grouped`.execute(trx)
          } catch (error) {
            // A statement SQLite answered by rolling the whole transaction back (a full disk, an
            // I/O error) leaves no savepoint to return to: then the group fails, as it must.
            try {
              await sql`rollback to grouped`.execute(trx)
            } catch {
              throw error
            }
            await sql`release grouped`.execute(trx)
            outcomes.push({ ok: false, error })
          }
        }
      })
    } catch (error) {
      for (const { reject } of group) reject(error)
      return
    }
    group.forEach(({ resolve, reject }, i) => {
      const outcome = outcomes[i]
      if (outcome.ok) resolve(outcome.value)
      else reject(outcome.error)
    })
  }

  return <T>(work: (trx: Transaction<Database>) => Promise<T>) =>
    new Promise<T>((resolve, reject) => {
      pending.push({ work, resolve: resolve as (value: unknown) => void, reject })
      if (pending.length === 1) setImmediate(() => void flush())
    })
}
