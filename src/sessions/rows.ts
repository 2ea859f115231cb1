import { sql, type SelectQueryBuilder } from 'kysely'
import { precompiled } from '../db/precompiled.js'
import type { Database, IdentityKind, Queryable } from '../db/schema.js'
import type { Touch } from './touch-rule.js'

// A session as the store reads it, and the statements of the key check's fast path that both
// databases' drivers run (store-sqlite.ts, store-postgres.ts).

/** A session joined with what the guard needs of its identity and its person's university link. */
export interface SessionRecord {
  id: string
  userId: string
  /** The identity the key was registered with: its openId, app and platform. */
  openId: string
  /** null: moved from before the app was recorded, and not used from an app since. */
  appId: string | null
  platform: string
  /** When the session was registered. */
  createdAt: number
  expiresAt: number
  /** When the expiry was last written: the last use, at the touch's precision. */
  touchedAt: number
  /** The `User-Agent` of the registering request; null when it sent none. */
  device: string | null
  /** When the person's university link was made, and the identity it proved. */
  university: {
    linkedAt: number | null
    subject: string | null
    email: string | null
    name: string | null
    isStudent: boolean | null
  }
}

/**
 * A session with its messenger identity (by its primary key) and its person's university identity
 * (by the unique index of one per person): the same two lookups after the key's as a session and
 * its user row took before identities (docs/identities.md, "The key check").
 */
export function selectSessions(db: Queryable) {
  return db
    .selectFrom('sessions')
    .innerJoin('identities as messenger', 'messenger.id', 'sessions.identity_id')
    .leftJoin('identities as university', (join) =>
      join
        .onRef('university.user_id', '=', 'sessions.user_id')
        .on('university.kind', '=', sql.lit<IdentityKind>('university')),
    )
    .select([
      'sessions.id',
      'sessions.user_id',
      'sessions.created_at',
      'sessions.expires_at',
      'sessions.touched_at',
      'sessions.device',
      'messenger.subject as open_id',
      'messenger.realm as app_id',
      'messenger.provider as platform',
      'university.linked_at as university_linked_at',
      'university.subject as university_subject',
      'university.email as university_email',
      'university.name as university_name',
      'university.is_student as university_is_student',
    ])
}

export type SessionRow =
  ReturnType<typeof selectSessions> extends SelectQueryBuilder<Database, never, infer Row>
    ? Row
    : never

export function rowToSession(row: SessionRow): SessionRecord {
  return {
    id: row.id,
    userId: row.user_id,
    openId: row.open_id ?? '',
    appId: row.app_id === '' ? null : row.app_id,
    platform: row.platform,
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
