import { sql, type Kysely, type Transaction } from 'kysely'
import { asError, perTurn } from './per-turn.js'
import type { Database } from './schema.js'
import { inTransaction } from './transaction.js'

/** Runs `work` in a transaction of its own, or in a savepoint of one shared with others. */
export type RunTransaction = <T>(work: (trx: Transaction<Database>) => Promise<T>) => Promise<T>

/** Bounds a group: more transactions in one turn make another group. */
export const GROUP_MAX = 32

type Work = (trx: Transaction<Database>) => Promise<unknown>

/**
 * For SQLite, whose commit is most of a registration's cost: every page the transaction changed
 * is written to the WAL, two system calls a page, one page at least per B-tree it touched. The
 * transactions handed in within one turn of the event loop (`per-turn.ts`) share one: each runs
 * in its own savepoint, and one that fails is rolled back to it alone, so each still commits all
 * or nothing (one alone in its turn runs as a plain transaction).
 * Every caller's promise settles after the shared COMMIT, never before: what it was told was
 * written is written, as with a transaction of its own. A failed COMMIT (a full disk) fails
 * every one of them.
 */
export function groupedCommits(db: Kysely<Database>): RunTransaction {
  const run = perTurn<Work, unknown>(async (group) => {
    if (group.length === 1) {
      // Alone in its turn (a registration at a quiet hour): its own transaction already makes it
      // all or nothing, so no savepoint, two statements fewer.
      return [await inTransaction(db, group[0]).catch(asError)]
    }
    let outcomes: unknown[] = []
    await inTransaction(db, async (trx) => {
      outcomes = []
      for (const work of group) {
        await sql`savepoint grouped`.execute(trx)
        try {
          outcomes.push(await work(trx))
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
          outcomes.push(asError(error))
        }
      }
    })
    return outcomes
  }, GROUP_MAX)
  return <T>(work: (trx: Transaction<Database>) => Promise<T>) => run(work) as Promise<T>
}
