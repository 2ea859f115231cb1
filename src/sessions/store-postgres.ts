import { sql, type CompiledQuery } from 'kysely'
import type { PostgresDb } from '../db/database.js'
import { perTurn } from '../db/per-turn.js'
import { precompiled } from '../db/precompiled.js'
import {
  selectSessions,
  sessionByKeyHash,
  touchSession,
  type KeyCheckDriver,
  type SessionRow,
} from './rows.js'

/** Bounds the array a batch binds; more key checks in one turn make another batch. */
export const KEY_CHECK_BATCH_MAX = 64

/**
 * The key checks of one turn, read in one statement. The array is compared through a subquery, as
 * the single key is (rows.ts): PostgreSQL plans a bare array parameter anew for every execution
 * (its custom plan, which knows the array's length, always looks cheaper than the generic one),
 * and that planning is about half the backend's CPU for the read (docs/performance.md). A
 * subquery's value no plan can see, so after its first five executions the statement keeps one
 * generic plan: the same index lookups.
 */
export const sessionsByKeyHashes = precompiled(
  (db, keyHashes: readonly string[]) =>
    selectSessions(db)
      .select('sessions.key_hash')
      .where('sessions.key_hash', '=', sql<string>`ANY((SELECT ${keyHashes}::text[])::text[])`),
  1,
)

/**
 * The touches of one turn and their day marks, in one statement. Each is written only to a
 * session still last written when its key check read it (touch-rule.ts), and a day is marked only
 * with a touch that wrote, so an erasure that deleted the user's marks is never followed by one.
 * Its arrays are bound through subqueries, as the read's (above), and it names its columns (no
 * `*`), so it is prepared by name (statements.ts) and keeps one generic plan.
 */
export const touchesAndMarks = precompiled(
  (
    db,
    ids: readonly string[],
    userIds: readonly string[],
    expiries: readonly number[],
    times: readonly number[],
    readTimes: readonly number[],
    days: readonly (string | null)[],
  ) => {
    const query = sql<{ id: string }>`
      WITH touched AS (
        UPDATE sessions SET expires_at = due.expires_at, touched_at = due.touched_at
        FROM unnest((SELECT ${ids}::text[]), (SELECT ${userIds}::text[]),
          (SELECT ${expiries}::bigint[]), (SELECT ${times}::bigint[]),
          (SELECT ${readTimes}::bigint[]), (SELECT ${days}::text[]))
          AS due(id, user_id, expires_at, touched_at, read_touched_at, day)
        WHERE sessions.id = due.id AND sessions.touched_at = due.read_touched_at
        RETURNING sessions.id, due.user_id, due.day
      ), marked AS (
        INSERT INTO user_active_days (user_id, day)
        SELECT DISTINCT user_id, day FROM touched WHERE day IS NOT NULL
        ON CONFLICT (user_id, day) DO NOTHING
      )
      SELECT id FROM touched`
    return { compile: (): CompiledQuery<{ id: string }> => query.compile(db) }
  },
  6,
)

/**
 * PostgreSQL's key check (store.ts). The key checks that arrive in one turn of the event loop wait
 * for its end together and are read in one statement (`per-turn.ts`): one round trip for many
 * requests, never more than a turn's wait for any of them; a key check alone in its turn is the
 * plain named statement. The touches that fall due are written in one more statement (a key
 * check's read is never a write: docs/performance.md). Both run on the pool, outside Kysely.
 */
export function createPostgresKeyChecks(db: PostgresDb): KeyCheckDriver {
  const { kysely } = db
  const readOne = async (keyHash: string): Promise<SessionRow | undefined> => {
    const { sql: text, parameters } = sessionByKeyHash.bind(kysely, keyHash)
    return (await db.query<SessionRow>(text, parameters)).rows[0]
  }
  const readTogether = perTurn<string, SessionRow | undefined>(async (keyHashes) => {
    if (keyHashes.length === 1) return [await readOne(keyHashes[0])]
    const { sql: text, parameters } = sessionsByKeyHashes.bind(kysely, keyHashes)
    const { rows } = await db.query<SessionRow & { key_hash: string }>(text, parameters)
    const byKeyHash = new Map(rows.map((row) => [row.key_hash, row]))
    return keyHashes.map((keyHash) => byKeyHash.get(keyHash))
  }, KEY_CHECK_BATCH_MAX)

  return {
    read: readTogether,
    async writeTouches(touches) {
      const [only] = touches
      if (touches.length === 1 && only !== undefined && only.touch.day === null) {
        // The commonest: one touch in its turn, no day to mark. The plain statement SQLite runs
        // too, with no arrays to bind and unnest, and no marks to insert.
        const { touch } = only
        const { sql: text, parameters } = touchSession.bind(
          kysely,
          only.sessionId,
          touch.expiresAt,
          touch.now,
          touch.readTouchedAt,
        )
        return [(await db.query(text, parameters)).rowCount > 0]
      }
      const { sql: text, parameters } = touchesAndMarks.bind(
        kysely,
        touches.map((due) => due.sessionId),
        touches.map((due) => due.userId),
        touches.map((due) => due.touch.expiresAt),
        touches.map((due) => due.touch.now),
        touches.map((due) => due.touch.readTouchedAt),
        touches.map((due) => due.touch.day),
      )
      const { rows } = await db.query<{ id: string }>(text, parameters)
      const written = new Set(rows.map((row) => row.id))
      return touches.map((due) => written.has(due.sessionId))
    },
  }
}
