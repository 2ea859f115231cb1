import type { AttemptStatus, UniversityAttemptRow } from '../db/schema.js'
import { abandonMailForCodes } from '../mail/outbox.js'
import type { Queryable } from '../db/schema.js'

/** Stores a new registration code after retiring the user's older ones (they are superseded). */
export async function insertCode(
  db: Queryable,
  code: { id: string; userId: string; codeHash: string; expiresAt: number },
  now: number,
): Promise<void> {
  await endPendingForUser(db, code.userId, now)
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
    .innerJoin('users', 'users.id', 'registration_codes.user_id')
    .select([
      'registration_codes.id',
      'registration_codes.user_id',
      'registration_codes.expires_at',
      'users.open_id',
    ])
    .where('registration_codes.code_hash', '=', codeHash)
    // The seed: valid while "not older than 30 minutes", so still valid at the expiry instant.
    .where('registration_codes.expires_at', '>=', now)
    .executeTakeFirst()
  return row === undefined
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
 * The attempt a callback may act on: redirected, unexpired, of the user named by `state`, and —
 * when bound — the one whose cookie the browser brought. Unbound, the newest one.
 */
export async function findOpenAttempt(
  db: Queryable,
  userId: string,
  cookieHash: string | null,
  now: number,
): Promise<UniversityAttemptRow | null> {
  let query = db
    .selectFrom('university_attempts')
    .selectAll()
    .where('user_id', '=', userId)
    .where('status', '=', 'redirected')
    .where('expires_at', '>', now)
  if (cookieHash !== null) query = query.where('cookie_hash', '=', cookieHash)
  const row = await query.orderBy('created_at', 'desc').limit(1).executeTakeFirst()
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

/** Ends the user's codes and unfinished attempts: their emailed links answer 401 from now on. */
export async function endPendingForUser(db: Queryable, userId: string, now: number): Promise<void> {
  const codes = await db
    .deleteFrom('registration_codes')
    .where('user_id', '=', userId)
    .returning('id')
    .execute()
  await abandonMailForCodes(
    db,
    codes.map((code) => code.id),
    now,
  )
  await db
    .updateTable('university_attempts')
    .set({ status: 'ended', finished_at: now })
    .where('user_id', '=', userId)
    .where('status', 'in', ['redirected', 'exchanging'])
    .execute()
}

/** Records the identity provider's token (hashed) on the user: the user is tier 2 from now on. */
export async function linkUniversity(
  db: Queryable,
  userId: string,
  tokenHash: string,
  now: number,
): Promise<void> {
  await db
    .updateTable('users')
    .set({ university_token_hash: tokenHash, university_linked_at: now, updated_at: now })
    .where('id', '=', userId)
    .execute()
}

/** Deletes codes and finished or expired attempts that can no longer be used. */
export async function pruneUniversity(db: Queryable, now: number): Promise<number> {
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

export async function findUserIdByOpenId(db: Queryable, openId: string): Promise<string | null> {
  const row = await db
    .selectFrom('users')
    .select('id')
    .where('open_id', '=', openId)
    .executeTakeFirst()
  return row?.id ?? null
}
