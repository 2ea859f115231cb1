import { sql } from 'kysely'
import type { AttemptStatus, IdentityKind, Queryable, UniversityAttemptRow } from '../db/schema.js'

// The one store that writes `registration_codes` and `university_attempts`.

/** Stores a new registration code. */
export async function insertCode(
  db: Queryable,
  code: { id: string; userId: string; codeHash: string; expiresAt: number },
  now: number,
): Promise<void> {
  await db
    .insertInto('registration_codes')
    .values({
      id: code.id,
      user_id: code.userId,
      code_hash: code.codeHash,
      created_at: now,
      expires_at: code.expiresAt,
    })
    .execute()
}

export interface LiveCode {
  id: string
  userId: string
  openId: string
  expiresAt: number
}

export async function findLiveCode(
  db: Queryable,
  codeHash: string,
  now: number,
): Promise<LiveCode | null> {
  const row = await db
    .selectFrom('registration_codes')
    .select((eb) => [
      'registration_codes.id',
      'registration_codes.user_id',
      'registration_codes.expires_at',
      // The seed's `state`: the person's openId, their first identity's (docs/identities.md).
      eb
        .selectFrom('identities')
        .select('identities.subject')
        .whereRef('identities.user_id', '=', 'registration_codes.user_id')
        .where('identities.kind', '=', sql.lit<IdentityKind>('messenger'))
        .orderBy('identities.created_at')
        .orderBy('identities.id')
        .limit(1)
        .as('open_id'),
    ])
    .where('registration_codes.code_hash', '=', codeHash)
    // The seed: valid while "not older than 30 minutes", so still valid at the expiry instant.
    .where('registration_codes.expires_at', '>=', now)
    .executeTakeFirst()
  return row === undefined || row.open_id === null
    ? null
    : { id: row.id, userId: row.user_id, openId: row.open_id, expiresAt: row.expires_at }
}

export async function insertAttempt(
  db: Queryable,
  attempt: { id: string; userId: string; codeId: string; cookieHash: string; expiresAt: number },
  now: number,
): Promise<void> {
  await db
    .insertInto('university_attempts')
    .values({
      id: attempt.id,
      user_id: attempt.userId,
      code_id: attempt.codeId,
      cookie_hash: attempt.cookieHash,
      status: 'redirected',
      created_at: now,
      expires_at: attempt.expiresAt,
      finished_at: null,
    })
    .execute()
}

/**
 * The attempt a callback may act on: redirected, unexpired, of the person one of whose openIds is
 * `state`, and — when bound — the one whose cookie the browser brought. Unbound, the newest one.
 */
export async function findOpenAttempt(
  db: Queryable,
  openId: string,
  cookieHash: string | null,
  now: number,
): Promise<UniversityAttemptRow | null> {
  let query = db
    .selectFrom('university_attempts')
    .innerJoin('identities', (join) =>
      join
        .onRef('identities.user_id', '=', 'university_attempts.user_id')
        .on('identities.kind', '=', sql.lit<IdentityKind>('messenger')),
    )
    .selectAll('university_attempts')
    .where('identities.subject', '=', openId)
    .where('university_attempts.status', '=', 'redirected')
    .where('university_attempts.expires_at', '>', now)
  if (cookieHash !== null) query = query.where('university_attempts.cookie_hash', '=', cookieHash)
  const row = await query
    .orderBy('university_attempts.created_at', 'desc')
    .limit(1)
    .executeTakeFirst()
  return row ?? null
}

/**
 * Moves an attempt from one status to the next. Only one caller wins a given transition, which is
 * what makes a callback delivered twice act once.
 */
export async function transitionAttempt(
  db: Queryable,
  attemptId: string,
  from: AttemptStatus,
  to: AttemptStatus,
  now: number,
): Promise<boolean> {
  const result = await db
    .updateTable('university_attempts')
    .set({ status: to, finished_at: to === 'exchanging' ? null : now })
    .where('id', '=', attemptId)
    .where('status', '=', from)
    .executeTakeFirst()
  return result.numUpdatedRows > 0n
}

/** Deletes every registration code of the user; returns their ids. */
export async function deleteCodesOfUser(db: Queryable, userId: string): Promise<string[]> {
  const rows = await db
    .deleteFrom('registration_codes')
    .where('user_id', '=', userId)
    .returning('id')
    .execute()
  return rows.map((row) => row.id)
}

/** Marks the user's redirected or exchanging attempts ended: their callbacks change nothing. */
export async function endOpenAttemptsOfUser(
  db: Queryable,
  userId: string,
  now: number,
): Promise<void> {
  await db
    .updateTable('university_attempts')
    .set({ status: 'ended', finished_at: now })
    .where('user_id', '=', userId)
    .where('status', 'in', ['redirected', 'exchanging'])
    .execute()
}

/** Deletes expired codes and expired attempts (finished or not): they can no longer be used. */
export async function deleteExpiredCodesAndAttempts(db: Queryable, now: number): Promise<number> {
  const codes = await db
    .deleteFrom('registration_codes')
    .where('expires_at', '<', now)
    .executeTakeFirst()
  const attempts = await db
    .deleteFrom('university_attempts')
    .where('expires_at', '<=', now)
    .executeTakeFirst()
  return Number(codes.numDeletedRows + attempts.numDeletedRows)
}
