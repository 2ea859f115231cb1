import DataLoader from 'dataloader'
import { sql, type CompiledQuery } from 'kysely'
import type { SqlReader, SqlRun } from '../db/database.js'
import { isWriteFault } from '../db/failures.js'
import { precompiled } from '../db/precompiled.js'
import type { Queryable } from '../db/schema.js'
import { utcDayOf, utcDayStart, type TouchRule } from './touch-rule.js'

// The one store that writes the `sessions` table.

/** A live session joined with the fields of its user that the guard needs. */
export interface SessionRecord {
  id: string
  userId: string
  openId: string
  /** When the session was registered (a rotation registers anew). */
  createdAt: number
  expiresAt: number
  touchedAt: number
  universityLinked: boolean
  /** When the user's university link was made, and the identity it proved. */
  university: {
    linkedAt: number | null
    subject: string | null
    email: string | null
    name: string | null
    isStudent: boolean | null
  }
}

// Every registration installs a session: built and compiled once, then only run.
const installSession = precompiled(
  (db, id: string, userId: string, keyHash: string, expiresAt: number, now: number) =>
    db
      .insertInto('sessions')
      .values({
        id,
        user_id: userId,
        key_hash: keyHash,
        created_at: now,
        expires_at: expiresAt,
        touched_at: now,
        expiry_floor: expiresAt,
      })
      .onConflict((oc) =>
        oc.column('user_id').doUpdateSet((eb) => ({
          id: eb.ref('excluded.id'),
          key_hash: eb.ref('excluded.key_hash'),
          created_at: eb.ref('excluded.created_at'),
          expires_at: eb.ref('excluded.expires_at'),
          touched_at: eb.ref('excluded.touched_at'),
          expiry_floor: eb.ref('excluded.expiry_floor'),
        })),
      ),
  5,
)

/**
 * Installs the user's one live session, replacing (and so ending) any earlier one. Registering is
 * a use of the new key: the day is marked, since the session's first touch comes only tomorrow.
 */
export async function replaceSession(
  db: Queryable,
  session: { id: string; userId: string; keyHash: string; expiresAt: number },
  now: number,
): Promise<void> {
  await installSession(db, session.id, session.userId, session.keyHash, session.expiresAt, now)
  await markActiveDay(db, session.userId, utcDayOf(now))
}

/** What a session is read as (`rowToSession`), by the key check and by the user's own lookup. */
const SESSION_COLUMNS = [
  'sessions.id',
  'sessions.user_id',
  'sessions.created_at',
  'sessions.expires_at',
  'sessions.touched_at',
  'users.open_id',
  'users.university_linked_at',
  'users.university_subject',
  'users.university_email',
  'users.university_name',
  'users.university_is_student',
] as const

// The key check runs on every authenticated request: built and compiled once, then only run.
// The key is compared with `(SELECT ?)`, not with the bare parameter: once ANALYZE has left
// sqlite_stat4 samples, SQLite plans a join on a bare bound parameter anew for every new value (a
// parse and a plan per request, 2-3x the lookup's cost; docs/performance.md). A subquery's value it
// cannot sample, so the plan is made once; it is the same index lookup. PostgreSQL plans both alike.
const sessionByKeyHash = precompiled(
  (db, keyHash: string) =>
    db
      .selectFrom('sessions')
      .innerJoin('users', 'users.id', 'sessions.user_id')
      .select(SESSION_COLUMNS)
      .where('sessions.key_hash', '=', sql<string>`(SELECT ${keyHash})`),
  1,
)

type SessionRow = Awaited<ReturnType<typeof sessionByKeyHash>>['rows'][number]
type KeyCheckRow = SessionRow & { key_hash: string; touched_to: number | null }

/** SESSION_COLUMNS as `keyChecksAndTouches` reads them from its `found`. */
const FOUND_COLUMNS = SESSION_COLUMNS.map(
  (column) => `found.${column.slice(column.indexOf('.') + 1)}`,
)

/** The key checks of one turn that could not write (`keyChecksTouching`): reads alone. */
const sessionsByKeyHashes = precompiled(
  (db, keyHashes: readonly string[]) =>
    db
      .selectFrom('sessions')
      .innerJoin('users', 'users.id', 'sessions.user_id')
      .select([...SESSION_COLUMNS, 'sessions.key_hash'])
      .where('sessions.key_hash', '=', sql<string>`ANY(${keyHashes})`),
  1,
)

/**
 * PostgreSQL: the key checks of one turn and the touches that fall due (touch-rule.ts, here in
 * SQL), as one statement. Every statement is a round trip whose fixed cost (the pool, the
 * protocol's messages, two system calls) is most of a key check's; a touch of its own was a
 * second one, and the turns it took broke the lock step in which the pool's connections batch
 * key checks (docs/performance.md). The UPDATE decides again on the row it locks, so of
 * instances racing for a touch one alone writes it; the day is marked only with a touch that
 * found the session, so an erasure that deleted the marks is never followed by a new one. The
 * statement commits before any answer: a crash loses no touch that was reported.
 */
const keyChecksAndTouches = precompiled(
  (
    db,
    keyHashes: readonly string[],
    now: number,
    ttlMs: number,
    intervalMs: number,
    maxAgeMs: number | null,
    dayStart: number,
    day: string,
  ) => {
    const at = sql<number>`${now}::bigint`
    const query = sql<KeyCheckRow>`
      WITH found AS (
        SELECT ${sql.join(SESSION_COLUMNS.map((column) => sql.ref(column)))}, sessions.key_hash,
          LEAST(${at} + ${ttlMs}::bigint, sessions.created_at + ${maxAgeMs}::bigint) AS extended
        FROM sessions INNER JOIN users ON users.id = sessions.user_id
        WHERE sessions.key_hash = ANY(${keyHashes})
      ), touched AS (
        UPDATE sessions
        SET expires_at = GREATEST(sessions.expires_at, found.extended), touched_at = ${at}
        FROM found
        WHERE sessions.id = found.id
          AND (found.touched_at < ${dayStart}::bigint OR found.touched_at <= ${at} - ${intervalMs}::bigint)
          AND sessions.expires_at > ${at}
          AND (sessions.created_at + ${maxAgeMs}::bigint > ${at}) IS NOT FALSE
          AND (sessions.touched_at < ${dayStart}::bigint
            OR (sessions.touched_at <= ${at} - ${intervalMs}::bigint
              AND found.extended > sessions.expires_at))
        RETURNING sessions.id, sessions.user_id, found.touched_at < ${dayStart}::bigint AS new_day
      ), marked AS (
        INSERT INTO user_active_days (user_id, day)
        SELECT user_id, ${day}::text FROM touched WHERE new_day
        ON CONFLICT (user_id, day) DO NOTHING
      )
      SELECT ${sql.join(FOUND_COLUMNS.map((column) => sql.ref(column)))}, found.key_hash,
        CASE WHEN touched.id IS NOT NULL THEN found.extended END AS touched_to
      FROM found LEFT JOIN touched ON touched.id = found.id`
    return { compile: (): CompiledQuery<KeyCheckRow> => query.compile(db) }
  },
  7,
)

/** Bounds the array a batch binds; more key checks in one turn make another batch. */
export const KEY_CHECK_BATCH_MAX = 64

/** A key check of `keyChecksTouching`: the session as read, and the touch it made. */
export interface CheckedKey {
  record: SessionRecord
  /** The time the key check and its touch were decided at. */
  now: number
  /** The expiry the touch extended the session to; `null`: not touched. */
  touchedTo: number | null
}

/**
 * The key check with its touch on PostgreSQL (`keyChecksAndTouches`), batched per turn of the
 * event loop: requests whose data arrived in the same turn wait for its end (`setImmediate`), not
 * longer; each one's read still starts after its request arrived. Nothing is kept between turns:
 * DataLoader's cache is off. A database that takes no writes (a full disk, a read-only standby)
 * still answers: the turn's key checks are read without touches, which a later request makes.
 */
export function keyChecksTouching(
  db: Queryable,
  reader: SqlReader,
  rule: TouchRule,
  clock: () => number,
): (keyHash: string) => Promise<CheckedKey | null> {
  const batches = new DataLoader<string, CheckedKey | null>(
    async (keyHashes) => {
      const now = clock()
      let rows: KeyCheckRow[]
      try {
        rows = await keyChecksAndTouches.readAll(
          reader,
          db,
          keyHashes,
          now,
          rule.ttlMs,
          rule.intervalMs,
          rule.maxAgeMs,
          utcDayStart(now),
          utcDayOf(now),
        )
      } catch (error) {
        if (!isWriteFault(error)) throw error
        const read = await sessionsByKeyHashes.readAll(reader, db, keyHashes)
        rows = read.map((row) => ({ ...row, touched_to: null }))
      }
      const byKeyHash = new Map(rows.map((row) => [row.key_hash, row]))
      return keyHashes.map((keyHash) => {
        const row = byKeyHash.get(keyHash)
        return row === undefined
          ? null
          : { record: rowToSession(row), now, touchedTo: row.touched_to }
      })
    },
    {
      cache: false,
      maxBatchSize: KEY_CHECK_BATCH_MAX,
      batchScheduleFn: (run) => setImmediate(run),
    },
  )
  return (keyHash) => batches.load(keyHash)
}

/**
 * The session whose key hashes to `keyHash`. With a `reader` (SQLite's `Db.reader`), the read
 * goes around Kysely and outside any transaction: it sees the last committed state.
 */
export async function findSessionByKeyHash(
  db: Queryable,
  keyHash: string,
  reader: SqlReader | null = null,
): Promise<SessionRecord | null> {
  const row =
    reader === null
      ? (await sessionByKeyHash(db, keyHash)).rows[0]
      : await sessionByKeyHash.readFirst(reader, db, keyHash)
  return row === undefined ? null : rowToSession(row)
}

function rowToSession(row: {
  id: string
  user_id: string
  created_at: number
  expires_at: number
  touched_at: number
  open_id: string
  university_linked_at: number | null
  university_subject: string | null
  university_email: string | null
  university_name: string | null
  university_is_student: number | null
}): SessionRecord {
  return {
    id: row.id,
    userId: row.user_id,
    openId: row.open_id,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    touchedAt: row.touched_at,
    universityLinked: row.university_linked_at !== null,
    university: {
      linkedAt: row.university_linked_at,
      subject: row.university_subject,
      email: row.university_email,
      name: row.university_name,
      isStudent: row.university_is_student === null ? null : row.university_is_student !== 0,
    },
  }
}

/**
 * Writes a later expiry. Matching on the id makes a touch that races a logout or rotation a
 * no-op: a deleted or replaced session is never brought back.
 */
const touch = precompiled(
  (db, sessionId: string, expiresAt: number, now: number) =>
    db
      .updateTable('sessions')
      .set({ expires_at: expiresAt, touched_at: now })
      .where('id', '=', sessionId)
      .where('expires_at', '<', expiresAt),
  3,
)

export async function touchSession(
  db: Queryable,
  sessionId: string,
  expiresAt: number,
  now: number,
): Promise<void> {
  await touch(db, sessionId, expiresAt, now)
}

/** `touchSession` in a transaction of `Db.writer`'s, `run` its. */
export function touchSessionWith(
  run: SqlRun,
  db: Queryable,
  sessionId: string,
  expiresAt: number,
  now: number,
): void {
  touch.runWith(run, db, sessionId, expiresAt, now)
}

/**
 * The first touch of a UTC day: it is written whatever the expiry, never lowers it, and matches
 * only a session not yet touched today, so of instances racing for it one alone marks the day.
 */
const touchOnNewDay = precompiled(
  (db, sessionId: string, expiresAt: number, now: number, dayStart: number) =>
    db
      .updateTable('sessions')
      .set({
        expires_at: sql<number>`CASE WHEN expires_at < ${expiresAt} THEN ${expiresAt} ELSE expires_at END`,
        touched_at: now,
      })
      .where('id', '=', sessionId)
      .where('touched_at', '<', dayStart),
  4,
)

const markDay = precompiled(
  (db, userId: string, day: string) =>
    db
      .insertInto('user_active_days')
      .values({ user_id: userId, day })
      .onConflict((oc) => oc.columns(['user_id', 'day']).doNothing()),
  2,
)

async function markActiveDay(db: Queryable, userId: string, day: string): Promise<void> {
  await markDay(db, userId, day)
}

/**
 * The first touch of the day and the user's mark for it (SPEC "Operator console"), in the
 * caller's transaction. A session that ended meanwhile marks nothing: an erasure that deleted
 * the user's marks is never followed by a new one.
 */
export async function touchSessionOnNewDay(
  trx: Queryable,
  session: { id: string; userId: string },
  expiresAt: number,
  now: number,
): Promise<void> {
  const dayStart = utcDayStart(now)
  const { numAffectedRows } = await touchOnNewDay(trx, session.id, expiresAt, now, dayStart)
  if ((numAffectedRows ?? 0n) > 0n) await markActiveDay(trx, session.userId, utcDayOf(now))
}

/** `touchSessionOnNewDay` in a transaction of `Db.writer`'s, `run` its. */
export function touchSessionOnNewDayWith(
  run: SqlRun,
  db: Queryable,
  session: { id: string; userId: string },
  expiresAt: number,
  now: number,
): void {
  const dayStart = utcDayStart(now)
  if (touchOnNewDay.runWith(run, db, session.id, expiresAt, now, dayStart) > 0) {
    markDay.runWith(run, db, session.userId, utcDayOf(now))
  }
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

/** Deletes one session; returns its user when this call was the one that ended it. */
export async function deleteSession(db: Queryable, sessionId: string): Promise<string | null> {
  const row = await db
    .deleteFrom('sessions')
    .where('id', '=', sessionId)
    .returning('user_id')
    .executeTakeFirst()
  return row?.user_id ?? null
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

/** The user's session (one per user), as the key check sees it; expired or not. */
export async function findSessionOfUser(
  db: Queryable,
  userId: string,
): Promise<SessionRecord | null> {
  const row = await db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .select(SESSION_COLUMNS)
    .where('sessions.user_id', '=', userId)
    .executeTakeFirst()
  return row === undefined ? null : rowToSession(row)
}

/** A session as the import from the original server compares it: its key's hash and expiry. */
export interface SessionVersion {
  id: string
  userId: string
  keyHash: string
  expiresAt: number
}

/** The sessions of these users (one each at most). */
export async function findSessionVersions(
  db: Queryable,
  userIds: readonly string[],
): Promise<SessionVersion[]> {
  if (userIds.length === 0) return []
  const rows = await db
    .selectFrom('sessions')
    .select(['id', 'user_id', 'key_hash', 'expires_at'])
    .where('user_id', 'in', userIds)
    .execute()
  return rows.map((row) => ({
    id: row.id,
    userId: row.user_id,
    keyHash: row.key_hash,
    expiresAt: row.expires_at,
  }))
}

/**
 * Installs the sessions of users that have none (users this transaction created), in one
 * statement. `createdAt` is also when the expiry was last written, so the first use extends it.
 */
export async function insertSessions(
  db: Queryable,
  sessions: readonly {
    id: string
    userId: string
    keyHash: string
    createdAt: number
    expiresAt: number
  }[],
): Promise<void> {
  if (sessions.length === 0) return
  await db
    .insertInto('sessions')
    .values(
      sessions.map((session) => ({
        id: session.id,
        user_id: session.userId,
        key_hash: session.keyHash,
        created_at: session.createdAt,
        expires_at: session.expiresAt,
        touched_at: session.createdAt,
        expiry_floor: session.expiresAt,
      })),
    )
    .execute()
}
