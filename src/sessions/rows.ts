import { sql, type SelectQueryBuilder } from 'kysely'
import { precompiled } from '../db/precompiled.js'
import type { Database, Queryable } from '../db/schema.js'
import type { Touch } from './touch-rule.js'

// A session as the store reads it, and the statements of the key check's fast path that both
// databases' drivers run (store-sqlite.ts, store-postgres.ts).

/** A session joined with the fields of its user that the guard needs. */
export interface SessionRecord {
  id: string
  userId: string
  openId: string
  /** When the session was registered. */
  createdAt: number
  expiresAt: number
  /** When the expiry was last written: the last use, at the touch's precision. */
  touchedAt: number
  /** The `User-Agent` of the registering request; null when it sent none. */
  device: string | null
  /** When the user's university link was made, and the identity it proved. */
  university: {
    linkedAt: number | null
    subject: string | null
    email: string | null
    name: string | null
    isStudent: boolean | null
  }
}

/** What a session is read as (`rowToSession`). */
const SESSION_COLUMNS = [
  'sessions.id',
  'sessions.user_id',
  'sessions.created_at',
  'sessions.expires_at',
  'sessions.touched_at',
  'sessions.device',
  'users.open_id',
  'users.university_linked_at',
  'users.university_subject',
  'users.university_email',
  'users.university_name',
  'users.university_is_student',
] as const

export function selectSessions(db: Queryable) {
  return db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .select(SESSION_COLUMNS)
}

export type SessionRow =
  ReturnType<typeof selectSessions> extends SelectQueryBuilder<Database, never, infer Row>
    ? Row
    : never

export function rowToSession(row: SessionRow): SessionRecord {
  return {
    id: row.id,
    userId: row.user_id,
    openId: row.open_id,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    touchedAt: row.touched_at,
    device: row.device,
    university: {
      linkedAt: row.university_linked_at,
      subject: row.university_subject,
      email: row.university_email,
      name: row.university_name,
      isStudent: row.university_is_student === null ? null : row.university_is_student !== 0,
    },
  }
}

// The key check's read, built and compiled once, then only run. The key is compared with
// `(SELECT ?)`, not with the bare parameter: once ANALYZE has left sqlite_stat4 samples, SQLite
// plans a join on a bare bound parameter anew for every new value (a parse and a plan per request,
// 2-3x the lookup's cost; docs/performance.md). A subquery's value it cannot sample, so the plan
// is made once; it is the same index lookup. PostgreSQL plans both alike.
export const sessionByKeyHash = precompiled(
  (db, keyHash: string) =>
    selectSessions(db).where('sessions.key_hash', '=', sql<string>`(SELECT ${keyHash})`),
  1,
)

/**
 * A touch: the expiry and time the key check decided (touch-rule.ts), written only to a session
 * still last written when it was read, so of instances racing for one touch one alone writes it,
 * and a session ended meanwhile is never written.
 */
export const touchSession = precompiled(
  (db, sessionId: string, expiresAt: number, now: number, readTouchedAt: number) =>
    db
      .updateTable('sessions')
      .set({ expires_at: expiresAt, touched_at: now })
      .where('id', '=', sessionId)
      .where('touched_at', '=', readTouchedAt),
  4,
)

/** The user was active on `day` (docs/console.md, "What each page shows"); a repeated mark changes nothing. */
export const markActiveDay = precompiled(
  (db, userId: string, day: string) =>
    db
      .insertInto('user_active_days')
      .values({ user_id: userId, day })
      .onConflict((oc) => oc.columns(['user_id', 'day']).doNothing()),
  2,
)

/** A touch a key check decided, with the session it belongs to. */
export interface DueTouch {
  sessionId: string
  userId: string
  touch: Touch
}

/**
 * How one database runs the key check's read and writes a turn's touches, outside Kysely where
 * that is faster (store-sqlite.ts, store-postgres.ts).
 */
export interface KeyCheckDriver {
  /** The session whose key hashes to `keyHash`, live or not. */
  read(keyHash: string): Promise<SessionRow | undefined> | SessionRow | undefined
  /**
   * Writes a turn's touches, each with its day mark when it wrote; whether each one wrote. A write
   * fault rejects them all.
   */
  writeTouches(touches: readonly DueTouch[]): Promise<boolean[]>
}
