import type { Queryable, UserRow } from '../db/schema.js'

// The one store that writes the `users` table.

/**
 * Creates the user on first registration or refreshes its messenger data; one row per openId
 * whatever the race (the unique key decides).
 */
export async function upsertUser(
  db: Queryable,
  user: { id: string; openId: string; unionId: string | null; messengerSessionKey: string },
  now: number,
): Promise<UserRow> {
  return db
    .insertInto('users')
    .values({
      id: user.id,
      open_id: user.openId,
      union_id: user.unionId,
      messenger_session_key: user.messengerSessionKey,
      university_token: null,
      university_linked_at: null,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) =>
      oc.column('open_id').doUpdateSet((eb) => ({
        messenger_session_key: eb.ref('excluded.messenger_session_key'),
        union_id: eb.fn.coalesce('excluded.union_id', 'users.union_id'),
        updated_at: eb.ref('excluded.updated_at'),
      })),
    )
    .returningAll()
    .executeTakeFirstOrThrow()
}

/**
 * Locks the user's row for the rest of the transaction; `false` when there is no such user. Every
 * transaction that writes a user's rows takes this lock first (docs/architecture.md, "Lock order"):
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
 * the user is back to needing tier 2, and the row itself stays.
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
      updated_at: now,
    })
    .where('id', '=', userId)
    .execute()
}

/** Records the identity provider's token (encrypted) on the user: tier 2 from now on. */
export async function setUniversityToken(
  db: Queryable,
  userId: string,
  encryptedToken: string,
  now: number,
): Promise<void> {
  await db
    .updateTable('users')
    .set({ university_token: encryptedToken, university_linked_at: now, updated_at: now })
    .where('id', '=', userId)
    .execute()
}

/** Deletes the user; sessions, codes and attempts go with it (foreign keys cascade). */
export async function deleteUser(db: Queryable, userId: string): Promise<void> {
  await db.deleteFrom('users').where('id', '=', userId).execute()
}

export async function findUserIdByOpenId(db: Queryable, openId: string): Promise<string | null> {
  const row = await db
    .selectFrom('users')
    .select('id')
    .where('open_id', '=', openId)
    .executeTakeFirst()
  return row?.id ?? null
}

export async function findUserByOpenId(db: Queryable, openId: string): Promise<UserRow | null> {
  const row = await db
    .selectFrom('users')
    .selectAll()
    .where('open_id', '=', openId)
    .executeTakeFirst()
  return row ?? null
}
