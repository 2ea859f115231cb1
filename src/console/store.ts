import type { OperatorRole, Queryable } from '../db/schema.js'

/** The console's two tables: sign-in links and sessions, each found by its secret's hash. */

export async function insertSignInToken(
  db: Queryable,
  row: {
    id: string
    tokenHash: string
    operator: string
    role: OperatorRole
    now: number
    expiresAt: number
  },
): Promise<void> {
  await db
    .insertInto('console_sign_in_tokens')
    .values({
      id: row.id,
      token_hash: row.tokenHash,
      operator: row.operator,
      role: row.role,
      created_at: row.now,
      expires_at: row.expiresAt,
      used_at: null,
    })
    .execute()
}

/**
 * Marks an unused, unexpired link used and returns its operator and role; null when there is
 * none. One UPDATE: of two instances given the same link at once, exactly one gets a row back.
 */
export async function spendSignInToken(
  db: Queryable,
  tokenHash: string,
  now: number,
): Promise<{ operator: string; role: OperatorRole } | null> {
  const row = await db
    .updateTable('console_sign_in_tokens')
    .set({ used_at: now })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .returning(['operator', 'role'])
    .executeTakeFirst()
  return row ?? null
}

/**
 * The operator and role an unused, unexpired link opens, and when it expires, without spending
 * it; null when there is none (docs/console.md: the sign-in page says whom it signs in as).
 */
export async function findUnusedSignInToken(
  db: Queryable,
  tokenHash: string,
  now: number,
): Promise<{ operator: string; role: OperatorRole; expiresAt: number } | null> {
  const row = await db
    .selectFrom('console_sign_in_tokens')
    .select(['operator', 'role', 'expires_at'])
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst()
  return row === undefined
    ? null
    : { operator: row.operator, role: row.role, expiresAt: Number(row.expires_at) }
}

export async function insertConsoleSession(
  db: Queryable,
  row: { id: string; tokenHash: string; operator: string; role: OperatorRole; now: number },
): Promise<void> {
  await db
    .insertInto('console_sessions')
    .values({
      id: row.id,
      token_hash: row.tokenHash,
      operator: row.operator,
      role: row.role,
      created_at: row.now,
      last_seen_at: row.now,
    })
    .execute()
}

export interface ConsoleSessionRecord {
  id: string
  operator: string
  role: OperatorRole
  createdAt: number
  lastSeenAt: number
}

export async function findConsoleSession(
  db: Queryable,
  tokenHash: string,
): Promise<ConsoleSessionRecord | null> {
  const row = await db
    .selectFrom('console_sessions')
    .select(['id', 'operator', 'role', 'created_at', 'last_seen_at'])
    .where('token_hash', '=', tokenHash)
    .executeTakeFirst()
  return row === undefined
    ? null
    : {
        id: row.id,
        operator: row.operator,
        role: row.role,
        createdAt: Number(row.created_at),
        lastSeenAt: Number(row.last_seen_at),
      }
}

export async function touchConsoleSession(db: Queryable, id: string, now: number): Promise<void> {
  await db.updateTable('console_sessions').set({ last_seen_at: now }).where('id', '=', id).execute()
}

export async function deleteConsoleSession(db: Queryable, id: string): Promise<boolean> {
  const result = await db.deleteFrom('console_sessions').where('id', '=', id).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

/**
 * `campusgate console revoke`: the sessions of one operator (null: everyone's), and the links not
 * yet used, which would otherwise open new ones. How many sessions ended.
 */
export async function deleteConsoleSessionsOf(
  db: Queryable,
  operator: string | null,
  now: number,
): Promise<number> {
  let links = db
    .updateTable('console_sign_in_tokens')
    .set({ used_at: now })
    .where('used_at', 'is', null)
  if (operator !== null) links = links.where('operator', '=', operator)
  await links.execute()
  let sessions = db.deleteFrom('console_sessions')
  if (operator !== null) sessions = sessions.where('operator', '=', operator)
  const result = await sessions.executeTakeFirst()
  return Number(result.numDeletedRows)
}

/** Links and sessions that can no longer open anything: `before` is the oldest worth keeping. */
export async function deleteStaleConsoleRows(
  db: Queryable,
  linksBefore: number,
  sessionsSeenBefore: number,
): Promise<void> {
  await db.deleteFrom('console_sign_in_tokens').where('expires_at', '<', linksBefore).execute()
  await db.deleteFrom('console_sessions').where('last_seen_at', '<', sessionsSeenBefore).execute()
}
