import type { Clock } from '../clock.js'
import type { Db } from '../db/database.js'
import { isWriteFault } from '../db/failures.js'
import { asError, perTurn } from '../db/per-turn.js'
import type { Queryable } from '../db/schema.js'
import { precompiled } from '../db/precompiled.js'
import {
  markActiveDay,
  rowToSession,
  selectSessions,
  touchSession,
  type DueTouch,
  type KeyCheckDriver,
  type SessionRecord,
} from './rows.js'
import { createPostgresKeyChecks } from './store-postgres.js'
import { createSqliteKeyChecks } from './store-sqlite.js'
import { isLive, touchAt, type Touch, type TouchRule } from './touch-rule.js'

export type { SessionRecord }

// The one store that writes the `sessions` table (and the day marks its touches write).

/** A key check's answer: the session as read, and the touch it wrote. */
export interface CheckedKey {
  record: SessionRecord
  /** The time the key check and its touch were decided at. */
  now: number
  /** Whether the session was live at `now` (`isLive`); an expired one is never touched. */
  live: boolean
  /** The expiry the touch wrote; `null`: nothing was due, or the touch could not be written. */
  touchedTo: number | null
}

/** A session as the import from the original server compares it. */
export interface SessionVersion {
  id: string
  userId: string
  keyHash: string
  expiresAt: number
  touchedAt: number
}

export interface NewSessionRow {
  id: string
  userId: string
  /** The messenger identity it is registered with. */
  identityId: string
  keyHash: string
  createdAt: number
  expiresAt: number
  /** Written with the expiry; a session imported from the original server was last used then. */
  touchedAt: number
  device: string | null
}

/**
 * What the sessions service and the account changes ask of the `sessions` table: find by key hash
 * with its due touch, create, end, list, prune. One implementation per database, built by
 * `createSessionStore`; they differ only in the key check's fast path (the driver), the rest is
 * the same Kysely on both. Methods taking `trx` run in the caller's transaction.
 */
export interface SessionStore {
  /** The session whose key hashes to `keyHash`, live or not, with the touch due now written. */
  check(keyHash: string): Promise<CheckedKey | null>
  create(trx: Queryable, sessions: readonly NewSessionRow[]): Promise<void>
  /** Deletes these sessions; the ones this call deleted (another may have ended some first). */
  end(trx: Queryable, sessionIds: readonly string[]): Promise<{ id: string; userId: string }[]>
  /** The user's sessions, live or not, most recently used first. */
  ofUser(db: Queryable, userId: string): Promise<SessionRecord[]>
  /** The sessions of these users, live or not, with their key's hash (the import compares keys). */
  versions(db: Queryable, userIds: readonly string[]): Promise<SessionVersion[]>
  /** The user used a key on `day` ('YYYY-MM-DD', UTC): the console's active users. */
  markActive(trx: Queryable, userId: string, day: string): Promise<void>
  /** Writes a later expiry to a session still last written at `touch.readTouchedAt`. */
  extend(trx: Queryable, sessionId: string, touch: Touch): Promise<boolean>
  /**
   * Ids of up to `limit` sessions past their expiry or, with SESSION_MAX_AGE, registered at or
   * before `createdBefore`.
   */
  findExpired(now: number, createdBefore: number | null, limit: number): Promise<string[]>
  /** Live sessions and their users at `now`, for the metrics. */
  counts(now: number, createdAfter: number | null): Promise<SessionCounts>
  /** `counts` now, by the store's rule (SESSION_MAX_AGE included): what `/metrics` shows. */
  liveCounts(): Promise<SessionCounts>
}

export interface SessionCounts {
  live: number
  /** Users with at least one live session. */
  users: number
  /** Users with more than one. */
  usersWithSeveral: number
}

function sessionValues(session: NewSessionRow) {
  return {
    id: session.id,
    user_id: session.userId,
    identity_id: session.identityId,
    key_hash: session.keyHash,
    created_at: session.createdAt,
    expires_at: session.expiresAt,
    touched_at: session.touchedAt,
    // A lower bound of the expiry that touches leave alone (migration 0012): the first expiry.
    expiry_floor: session.expiresAt,
    device: session.device,
  }
}

/** A registration's one session, its statement compiled once. */
const insertSession = precompiled(
  (
    db,
    id: string,
    userId: string,
    identityId: string,
    keyHash: string,
    createdAt: number,
    expiresAt: number,
    touchedAt: number,
    device: string | null,
  ) =>
    db
      .insertInto('sessions')
      .values(
        sessionValues({ id, userId, identityId, keyHash, createdAt, expiresAt, touchedAt, device }),
      ),
  8,
)

/** More touches in one turn make another batch. */
const TOUCH_BATCH_MAX = 64

/** The store for `db`'s database, its key check deciding touches by `rule` at `clock`'s time. */
export function createSessionStore(db: Db, rule: TouchRule, clock: Clock): SessionStore {
  const driver: KeyCheckDriver =
    db.dialect === 'sqlite' ? createSqliteKeyChecks(db) : createPostgresKeyChecks(db)
  const kysely = db.kysely
  /** The turn's touches, each answered with the expiry written for its session, or null. */
  const touch = perTurn<DueTouch, number | null>(async (batch) => {
    // Two key checks of one session whose touches fall in one turn write one touch, the first's,
    // and both report it.
    const first = new Map<string, DueTouch>()
    for (const due of batch) if (!first.has(due.sessionId)) first.set(due.sessionId, due)
    const touches = [...first.values()]
    const written = await driver.writeTouches(touches).catch(asError)
    if (written instanceof Error) return batch.map(() => written)
    const expiries = new Map(
      touches.map((due, i) => [due.sessionId, written[i] === true ? due.touch.expiresAt : null]),
    )
    return batch.map((due) => expiries.get(due.sessionId) ?? null)
  }, TOUCH_BATCH_MAX)

  async function countLive(now: number, createdAfter: number | null): Promise<SessionCounts> {
    const perUser = kysely
      .selectFrom('sessions')
      .select((eb) => ['user_id', eb.fn.countAll<number | string>().as('live')])
      .where('expires_at', '>', now)
      .$if(createdAfter !== null, (query) => query.where('created_at', '>', createdAfter!))
      .groupBy('user_id')
      .as('per_user')
    const row = await kysely
      .selectFrom(perUser)
      .select((eb) => [
        eb.fn.coalesce(eb.fn.sum<number | string>('live'), eb.lit(0)).as('live'),
        eb.fn.countAll<number | string>().as('users'),
        eb.fn
          .sum<number | string>(eb.case().when('live', '>', 1).then(1).else(0).end())
          .as('several'),
      ])
      .executeTakeFirstOrThrow()
    return {
      live: Number(row.live),
      users: Number(row.users),
      usersWithSeveral: Number(row.several ?? 0),
    }
  }

  return {
    async check(keyHash) {
      const row = await driver.read(keyHash)
      if (row === undefined) return null
      const record = rowToSession(row)
      const now = clock.now().getTime()
      if (!isLive(rule, record, now)) return { record, now, live: false, touchedTo: null }
      const due = touchAt(rule, record, now)
      if (due === null) return { record, now, live: true, touchedTo: null }
      try {
        const touchedTo = await touch({ sessionId: record.id, userId: record.userId, touch: due })
        return { record, now, live: true, touchedTo }
      } catch (error) {
        // A database that cannot take a write (a full disk, a read-only standby) still answers
        // the key check: the session keeps its expiry and is touched on a later request.
        if (!isWriteFault(error)) throw error
        return { record, now, live: true, touchedTo: null }
      }
    },

    async create(trx, sessions) {
      const [only] = sessions
      if (only === undefined) return
      if (sessions.length === 1) {
        const { id, userId, identityId, keyHash, createdAt, expiresAt, touchedAt, device } = only
        await insertSession(
          trx,
          id,
          userId,
          identityId,
          keyHash,
          createdAt,
          expiresAt,
          touchedAt,
          device,
        )
        return
      }
      await trx.insertInto('sessions').values(sessions.map(sessionValues)).execute()
    },

    async end(trx, sessionIds) {
      if (sessionIds.length === 0) return []
      const rows = await trx
        .deleteFrom('sessions')
        .where('id', 'in', sessionIds)
        .returning(['id', 'user_id'])
        .execute()
      return rows.map((row) => ({ id: row.id, userId: row.user_id }))
    },

    async ofUser(trx, userId) {
      const rows = await selectSessions(trx)
        .where('sessions.user_id', '=', userId)
        .orderBy('sessions.touched_at', 'desc')
        .orderBy('sessions.created_at', 'desc')
        .orderBy('sessions.id')
        .execute()
      return rows.map(rowToSession)
    },

    async versions(trx, userIds) {
      if (userIds.length === 0) return []
      const rows = await trx
        .selectFrom('sessions')
        .select(['id', 'user_id', 'key_hash', 'expires_at', 'touched_at'])
        .where('user_id', 'in', userIds)
        .execute()
      return rows.map((row) => ({
        id: row.id,
        userId: row.user_id,
        keyHash: row.key_hash,
        expiresAt: row.expires_at,
        touchedAt: row.touched_at,
      }))
    },

    async markActive(trx, userId, day) {
      await markActiveDay(trx, userId, day)
    },

    async extend(trx, sessionId, { expiresAt, now, readTouchedAt }) {
      const { numAffectedRows } = await touchSession(trx, sessionId, expiresAt, now, readTouchedAt)
      return (numAffectedRows ?? 0n) > 0n
    },

    async findExpired(now, createdBefore, limit) {
      await raiseExpiryFloors(kysely, now, limit)
      return findExpiredSessionIds(kysely, now, createdBefore, limit)
    },

    liveCounts() {
      const now = clock.now().getTime()
      return countLive(now, rule.maxAgeMs === null ? null : now - rule.maxAgeMs)
    },

    counts: countLive,
  }
}

/**
 * Ids of sessions whose expiry has passed, lowest floor first; then, with SESSION_MAX_AGE, of
 * those registered at or before `createdBefore`, oldest first. At most `limit`. Expired sessions
 * are searched by `expiry_floor`, which is never past the expiry: a session whose floor has
 * passed but whose touches kept it live is skipped here and raised by `raiseExpiryFloors`.
 */
export async function findExpiredSessionIds(
  db: Queryable,
  now: number,
  createdBefore: number | null,
  limit: number,
): Promise<string[]> {
  // The oldest `limit` by one index; the expired read keeps only sessions whose expiry has passed.
  const oldestBy = async (column: 'expiry_floor' | 'created_at', bound: number) => {
    const rows = await db
      .selectFrom('sessions')
      .select('id')
      .where(column, '<=', bound)
      .$if(column === 'expiry_floor', (query) => query.where('expires_at', '<=', now))
      .orderBy(column)
      .limit(limit)
      .execute()
    return rows.map((row) => row.id)
  }
  const ids = await oldestBy('expiry_floor', now)
  if (createdBefore === null || ids.length === limit) return ids
  // Two reads, each searching its own index: neither index can answer an OR of the two
  // conditions, so one query with it read every session.
  const aged = await oldestBy('created_at', createdBefore)
  const found = new Set(ids)
  for (const id of aged) if (found.size < limit) found.add(id)
  return [...found]
}

/**
 * Raises to its expiry the floor of up to `limit` sessions whose floor has passed while touches
 * kept them live, so the pruner's search passes over each of them once per SESSION_TTL at most.
 * The expiry is read in the same statement: a touch meanwhile only raises it further.
 */
export async function raiseExpiryFloors(
  db: Queryable,
  now: number,
  limit: number,
): Promise<number> {
  const { numUpdatedRows } = await db
    .updateTable('sessions')
    .set((eb) => ({ expiry_floor: eb.ref('expires_at') }))
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('sessions')
        .select('id')
        .where('expiry_floor', '<=', now)
        .where('expires_at', '>', now)
        .orderBy('expiry_floor')
        .limit(limit),
    )
    .executeTakeFirst()
  return Number(numUpdatedRows)
}

/** How many users used their key on each day from `sinceDay` ('YYYY-MM-DD', UTC) on. */
export async function countActiveUsersByDay(
  db: Queryable,
  sinceDay: string,
): Promise<{ day: string; users: number }[]> {
  const rows = await db
    .selectFrom('user_active_days')
    .select((eb) => ['day', eb.fn.countAll().as('users')])
    .where('day', '>=', sinceDay)
    .groupBy('day')
    .orderBy('day')
    .execute()
  return rows.map((row) => ({ day: row.day, users: Number(row.users) }))
}

/** Erasure: the user's day marks go with it. */
export async function deleteActiveDaysOfUser(db: Queryable, userId: string): Promise<void> {
  await db.deleteFrom('user_active_days').where('user_id', '=', userId).execute()
}
