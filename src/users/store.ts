import { precompiled } from '../db/precompiled.js'
import type { Queryable, UserRow } from '../db/schema.js'

// The one store that writes the `users` table.

/** A user as registration creates it: messenger data only, no university link yet. */
function newUserRow(
  id: string,
  openId: string,
  unionId: string | null,
  messengerSessionKey: string,
  now: number,
) {
  return {
    id,
    open_id: openId,
    union_id: unionId,
    messenger_session_key: messengerSessionKey,
    university_token: null,
    university_linked_at: null,
    university_issuer: null,
    university_subject: null,
    university_email: null,
    university_name: null,
    university_is_student: null,
    university_binding: null,
    created_at: now,
    updated_at: now,
  }
}

// Registration runs this on every login: built and compiled once, then only run.
const upsert = precompiled(
  (db, id: string, openId: string, unionId: string | null, sessionKey: string, now: number) =>
    db
      .insertInto('users')
      .values(newUserRow(id, openId, unionId, sessionKey, now))
      .onConflict((oc) =>
        oc.column('open_id').doUpdateSet((eb) => ({
          messenger_session_key: eb.ref('excluded.messenger_session_key'),
          union_id: eb.fn.coalesce('excluded.union_id', 'users.union_id'),
          updated_at: eb.ref('excluded.updated_at'),
        })),
      )
      // Only the id: a statement without `*` stays prepared on PostgreSQL (db/statements.ts).
      .returning('id'),
  5,
)

/**
 * Creates the user on first registration or refreshes its messenger data; one row per openId
 * whatever the race (the unique key decides). The user's id: `user.id` when this created it.
 */
export async function upsertUser(
  db: Queryable,
  user: { id: string; openId: string; unionId: string | null; messengerSessionKey: string },
  now: number,
): Promise<{ id: string }> {
  const { rows } = await upsert(
    db,
    user.id,
    user.openId,
    user.unionId,
    user.messengerSessionKey,
    now,
  )
  if (rows[0] === undefined) throw new Error('the upsert of a user returned no row')
  return rows[0]
}

/**
 * Locks the user's row for the rest of the transaction; `false` when there is no such user. Every
 * transaction that writes a user's rows takes this lock first (docs/architecture.md, "Lock order and faults"):
 * a writer that started elsewhere waits here instead of deadlocking. A no-op update does it on
 * both databases (on SQLite it makes the transaction a writer from its first statement).
 */
export async function lockUser(db: Queryable, userId: string): Promise<boolean> {
  const result = await db
    .updateTable('users')
    .set((eb) => ({ updated_at: eb.ref('updated_at') }))
    .where('id', '=', userId)
    .executeTakeFirst()
  return result.numUpdatedRows > 0n
}

/**
 * `lockUser` for the user a session belongs to; that user's id, or `null` when the session is gone.
 * One statement, and a write: a transaction that starts with it never upgrades a stale read.
 */
export async function lockUserOfSession(db: Queryable, sessionId: string): Promise<string | null> {
  const row = await db
    .updateTable('users')
    .set((eb) => ({ updated_at: eb.ref('updated_at') }))
    .where('id', '=', (eb) =>
      eb.selectFrom('sessions').select('sessions.user_id').where('sessions.id', '=', sessionId),
    )
    .returning('id')
    .executeTakeFirst()
  return row?.id ?? null
}

/**
 * Nullifies the messenger session key and the university token (docs/decisions.md, "Sessions"):
 * the user is back to needing tier 2, and the row itself stays. The identity it proved stays on
 * record, but is free again for another account (exclusive binding).
 */
export async function nullifyCredentials(
  db: Queryable,
  userId: string,
  now: number,
): Promise<void> {
  await db
    .updateTable('users')
    .set({
      messenger_session_key: null,
      university_token: null,
      university_linked_at: null,
      university_binding: null,
      updated_at: now,
    })
    .where('id', '=', userId)
    .execute()
}

/** The identity a university link proved; fields the provider did not give are absent. */
export interface UniversityIdentityRecord {
  issuer: string
  subject: string
  email?: string
  name?: string
  isStudent?: boolean
}

/**
 * Records the identity provider's token (encrypted) and the identity it proved on the user: the user
 * is tier 2 from now on. `binding` (exclusive binding only) is unique among users: a race with
 * another user over one identity fails here.
 */
export async function setUniversityLink(
  db: Queryable,
  userId: string,
  link: {
    encryptedToken: string | null
    identity: UniversityIdentityRecord | null
    binding: string | null
  },
  now: number,
): Promise<void> {
  const identity = link.identity
  await db
    .updateTable('users')
    .set({
      university_token: link.encryptedToken,
      university_linked_at: now,
      university_issuer: identity?.issuer ?? null,
      university_subject: identity?.subject ?? null,
      university_email: identity?.email ?? null,
      university_name: identity?.name ?? null,
      university_is_student: identity?.isStudent === undefined ? null : Number(identity.isStudent),
      university_binding: link.binding,
      updated_at: now,
    })
    .where('id', '=', userId)
    .execute()
}

/** Another user whose live link holds this binding (exclusive binding), or `null`. */
export async function findBindingHolder(
  db: Queryable,
  binding: string,
  exceptUserId: string,
): Promise<string | null> {
  const row = await db
    .selectFrom('users')
    .select('id')
    .where('university_binding', '=', binding)
    .where('id', '!=', exceptUserId)
    .executeTakeFirst()
  return row?.id ?? null
}

/**
 * UNIVERSITY_LINK_MAX_AGE: links made at or before `linkedBefore` have lapsed. Their token is
 * nullified and their binding freed, so the identity can be proved again (by anyone). The users
 * whose link this lapsed (their rows are now locked).
 */
export async function lapseLinksOfBinding(
  db: Queryable,
  binding: string,
  linkedBefore: number,
  now: number,
): Promise<{ id: string; openId: string }[]> {
  const rows = await db
    .updateTable('users')
    .set(LAPSED(now))
    .where('university_binding', '=', binding)
    .where('university_linked_at', '<=', linkedBefore)
    .returning(['id', 'open_id'])
    .execute()
  return rows.map((row) => ({ id: row.id, openId: row.open_id }))
}

const LAPSED = (now: number) =>
  ({
    university_token: null,
    university_linked_at: null,
    university_binding: null,
    updated_at: now,
  }) as const

/** Lapses the user's link if it was made at or before `linkedBefore`; whether it did. */
export async function lapseLinkOfUser(
  db: Queryable,
  userId: string,
  linkedBefore: number,
  now: number,
): Promise<boolean> {
  const result = await db
    .updateTable('users')
    .set(LAPSED(now))
    .where('id', '=', userId)
    .where('university_linked_at', '<=', linkedBefore)
    .executeTakeFirst()
  return result.numUpdatedRows > 0n
}

/** Users whose university link was made at or before `linkedBefore` (it has lapsed), oldest first. */
export async function findUsersWithLapsedLinks(
  db: Queryable,
  linkedBefore: number,
  limit: number,
): Promise<string[]> {
  const rows = await db
    .selectFrom('users')
    .select('id')
    .where('university_linked_at', '<=', linkedBefore)
    .orderBy('university_linked_at')
    .limit(limit)
    .execute()
  return rows.map((row) => row.id)
}

/** What a user's lifecycle events name: the openId, and whether a university link is held. */
export async function findUserForEvents(
  db: Queryable,
  userId: string,
): Promise<{ openId: string; linked: boolean } | null> {
  const row = await db
    .selectFrom('users')
    .select(['open_id', 'university_linked_at'])
    .where('id', '=', userId)
    .executeTakeFirst()
  return row === undefined
    ? null
    : { openId: row.open_id, linked: row.university_linked_at !== null }
}

/** Deletes the user; sessions, codes and attempts go with it (foreign keys cascade). */
export async function deleteUser(db: Queryable, userId: string): Promise<void> {
  await db.deleteFrom('users').where('id', '=', userId).execute()
}

export async function findUserByOpenId(db: Queryable, openId: string): Promise<UserRow | null> {
  const row = await db
    .selectFrom('users')
    .selectAll()
    .where('open_id', '=', openId)
    .executeTakeFirst()
  return row ?? null
}

/** What the import from the original server needs to know of users it may already hold. */
export interface UserVersion {
  id: string
  openId: string
  /** When campusgate last wrote the user: later than that, the original's key is the newer one. */
  updatedAt: number
}

/** The users among `openIds` that exist, each with when campusgate last wrote it. */
export async function findUserVersions(
  db: Queryable,
  openIds: readonly string[],
): Promise<UserVersion[]> {
  if (openIds.length === 0) return []
  const rows = await db
    .selectFrom('users')
    .select(['id', 'open_id', 'updated_at'])
    .where('open_id', 'in', openIds)
    .execute()
  return rows.map((row) => ({ id: row.id, openId: row.open_id, updatedAt: row.updated_at }))
}

/**
 * Creates the users that do not exist yet, in one statement; a user that does (a registration
 * that got there first) is left exactly as it is. The users this call created, as `{ id, openId }`.
 */
export async function insertUsersIfAbsent(
  db: Queryable,
  users: readonly { id: string; openId: string; messengerSessionKey: string }[],
  now: number,
): Promise<{ id: string; openId: string }[]> {
  if (users.length === 0) return []
  const rows = await db
    .insertInto('users')
    .values(
      users.map((user) => newUserRow(user.id, user.openId, null, user.messengerSessionKey, now)),
    )
    .onConflict((oc) => oc.column('open_id').doNothing())
    .returning(['id', 'open_id'])
    .execute()
  return rows.map((row) => ({ id: row.id, openId: row.open_id }))
}
