import { precompiled } from '../db/precompiled.js'
import type { Queryable } from '../db/schema.js'

// The one store that writes the `users` table: the person, whose ways of being known are their
// identities (identities/store.ts).

const insert = precompiled(
  (db, id: string, now: number) =>
    db.insertInto('users').values({ id, created_at: now, updated_at: now }),
  2,
)

/** A new person (their first registration). */
export async function insertUser(db: Queryable, userId: string, now: number): Promise<void> {
  await insert(db, userId, now)
}

const lock = precompiled(
  (db, userId: string) =>
    db
      .updateTable('users')
      .set((eb) => ({ updated_at: eb.ref('updated_at') }))
      .where('id', '=', userId),
  1,
)

/**
 * Locks the user's row for the rest of the transaction; `false` when there is no such user. Every
 * transaction that writes a user's rows takes this lock first (docs/architecture.md, "Lock order and faults"):
 * a writer that started elsewhere waits here instead of deadlocking. A no-op update does it on
 * both databases (on SQLite it makes the transaction a writer from its first statement).
 */
export async function lockUser(db: Queryable, userId: string): Promise<boolean> {
  const result = await lock(db, userId)
  return (result.numAffectedRows ?? 0n) > 0n
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

/** Deletes the user; identities, sessions, codes and attempts go with it (foreign keys cascade). */
export async function deleteUser(db: Queryable, userId: string): Promise<void> {
  await db.deleteFrom('users').where('id', '=', userId).execute()
}

/** An operator's suspension of a person (docs/console.md, "Suspending a user"). */
export interface Suspension {
  /** Epoch milliseconds. */
  at: number
  reason: string | null
}

/** The person's row: when they were first registered and last changed, and their suspension. */
export async function findUser(
  db: Queryable,
  userId: string,
): Promise<{
  id: string
  createdAt: number
  updatedAt: number
  suspension: Suspension | null
} | null> {
  const row = await db
    .selectFrom('users')
    .select(['id', 'created_at', 'updated_at', 'suspended_at', 'suspension_reason'])
    .where('id', '=', userId)
    .executeTakeFirst()
  return row === undefined
    ? null
    : {
        id: row.id,
        createdAt: Number(row.created_at),
        updatedAt: Number(row.updated_at),
        suspension:
          row.suspended_at === null
            ? null
            : { at: Number(row.suspended_at), reason: row.suspension_reason },
      }
}

const suspendedAt = precompiled(
  (db, userId: string) => db.selectFrom('users').select('suspended_at').where('id', '=', userId),
  1,
)

/** Whether the person is suspended now (a registration's check, under the person's row lock). */
export async function isSuspended(db: Queryable, userId: string): Promise<boolean> {
  const [row] = (await suspendedAt(db, userId)).rows
  return row !== undefined && row.suspended_at !== null
}

/**
 * Suspends the person unless they are suspended already; whether it did. The caller holds the
 * person's row lock.
 */
export async function suspendUser(
  db: Queryable,
  userId: string,
  change: { reason: string | null; now: number },
): Promise<boolean> {
  const result = await db
    .updateTable('users')
    .set({ suspended_at: change.now, suspension_reason: change.reason, updated_at: change.now })
    .where('id', '=', userId)
    .where('suspended_at', 'is', null)
    .executeTakeFirst()
  return (result.numUpdatedRows ?? 0n) > 0n
}

/** Lifts the person's suspension; whether they were suspended. */
export async function restoreUser(db: Queryable, userId: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable('users')
    .set({ suspended_at: null, suspension_reason: null, updated_at: now })
    .where('id', '=', userId)
    .where('suspended_at', 'is not', null)
    .executeTakeFirst()
  return (result.numUpdatedRows ?? 0n) > 0n
}

/** New people in one statement (the import from the original server). */
export async function insertUsers(
  db: Queryable,
  userIds: readonly string[],
  now: number,
): Promise<void> {
  if (userIds.length === 0) return
  await db
    .insertInto('users')
    .values(userIds.map((id) => ({ id, created_at: now, updated_at: now })))
    .execute()
}

/** Deletes people in one statement: the import's, whose identity a registration made first. */
export async function deleteUsers(db: Queryable, userIds: readonly string[]): Promise<void> {
  if (userIds.length === 0) return
  await db.deleteFrom('users').where('id', 'in', userIds).execute()
}
