import type { CompiledQuery } from 'kysely'
import type { SqliteDb, SqlRun } from '../db/database.js'
import { inTransaction } from '../db/transaction.js'
import {
  markActiveDay,
  sessionByKeyHash,
  touchSession,
  type DueTouch,
  type KeyCheckDriver,
  type SessionRow,
} from './rows.js'

/**
 * SQLite's key check (store.ts): read synchronously on `Db.reader`, the touches of one turn
 * written in one synchronous transaction on `Db.writer`. Both go around Kysely, whose mutex and
 * promise per statement cost several times what SQLite spends on a lookup or a touch
 * (docs/performance.md).
 */
export function createSqliteKeyChecks(db: SqliteDb): KeyCheckDriver {
  const { kysely, reader, writer } = db

  /** A touch's statement, and its day mark's when it is the first use of a day. */
  function statementsOf({ sessionId, userId, touch }: DueTouch): {
    touch: CompiledQuery
    mark: CompiledQuery | null
  } {
    return {
      touch: touchSession.bind(kysely, sessionId, touch.expiresAt, touch.now, touch.readTouchedAt),
      mark: touch.day === null ? null : markActiveDay.bind(kysely, userId, touch.day),
    }
  }

  return {
    read(keyHash) {
      if (reader === null) {
        // In memory there is no second connection: the read waits for Kysely's.
        return sessionByKeyHash(kysely, keyHash).then(({ rows }) => rows[0])
      }
      const { sql, parameters } = sessionByKeyHash.bind(kysely, keyHash)
      return reader.first<SessionRow>(sql, parameters)
    },

    async writeTouches(touches) {
      // A touch's statements can break no constraint (two columns that no key holds, a mark that
      // ignores its duplicate), so no savepoint each: what can fail them (a full disk, an I/O
      // error, a lock not had within busy_timeout) fails the whole transaction, as a failed
      // COMMIT fails every touch of a group.
      let written: boolean[] = []
      const writeAll = (run: SqlRun) => {
        written = touches.map((due) => {
          const { touch, mark } = statementsOf(due)
          const wrote = run(touch.sql, touch.parameters) > 0
          if (wrote && mark !== null) run(mark.sql, mark.parameters)
          return wrote
        })
      }
      if (writer.transaction(writeAll)) return written
      // A transaction of Kysely's is open on the writing connection (across awaits): these
      // touches wait for its turn behind Kysely's mutex.
      return inTransaction(kysely, async (trx) => {
        const wroteEach: boolean[] = []
        for (const due of touches) {
          const { touch, mark } = statementsOf(due)
          const wrote = ((await trx.executeQuery(touch)).numAffectedRows ?? 0n) > 0n
          if (wrote && mark !== null) await trx.executeQuery(mark)
          wroteEach.push(wrote)
        }
        return wroteEach
      })
    },
  }
}
