import { sql, type Updateable } from 'kysely'
import { claimDue, settleClaim, type Claim, type RowCondition } from '../lib/outbox.js'
import { newId } from '../lib/secrets.js'
import type { Dialect } from '../db/database.js'
import type { MailOutboxRow, MailOutboxTable, Queryable } from '../db/schema.js'
import type { Mail } from './transport.js'

// The one store that writes `mail_outbox`.

/**
 * Queues a mail in the caller's transaction, so it exists exactly when the state it announces
 * does. The worker delivers it; until `expiresAt` it keeps trying.
 */
export async function enqueueMail(
  db: Queryable,
  mail: Mail,
  times: { now: number; expiresAt: number },
  owner: { userId: string; registrationCodeId: string | null } | null = null,
): Promise<string> {
  const id = newId()
  await db
    .insertInto('mail_outbox')
    .values({
      id,
      recipient: mail.to,
      subject: mail.subject,
      text_body: mail.text,
      html_body: mail.html,
      created_at: times.now,
      expires_at: times.expiresAt,
      next_attempt_at: times.now,
      attempts: 0,
      locked_until: null,
      sent_at: null,
      abandoned_at: null,
      last_error: null,
      user_id: owner?.userId ?? null,
      registration_code_id: owner?.registrationCodeId ?? null,
    })
    .execute()
  return id
}

/**
 * Abandons the undelivered mails of these registration codes (superseded or ended): their links
 * would only answer 401. The bodies, which hold the links, are wiped.
 */
export async function abandonMailOfCodes(
  db: Queryable,
  codeIds: readonly string[],
  now: number,
): Promise<void> {
  if (codeIds.length === 0) return
  await db
    .updateTable('mail_outbox')
    .set({ abandoned_at: now, text_body: null, html_body: null })
    .where('registration_code_id', 'in', codeIds)
    .where('sent_at', 'is', null)
    .where('abandoned_at', 'is', null)
    .execute()
}

/** Deletes every mail row of a user, sent or not (erasure); returns their ids. */
export async function deleteMailOfUser(db: Queryable, userId: string): Promise<string[]> {
  const rows = await db
    .deleteFrom('mail_outbox')
    .where('user_id', '=', userId)
    .returning('id')
    .execute()
  return rows.map((row) => row.id)
}

/**
 * Deletes delivered or abandoned mail rows (their bodies already wiped) queued before `before`;
 * returns their ids.
 */
export async function deleteFinishedMail(db: Queryable, before: number): Promise<string[]> {
  const rows = await db
    .deleteFrom('mail_outbox')
    .where((eb) => eb.or([eb('sent_at', 'is not', null), eb('abandoned_at', 'is not', null)]))
    .where('created_at', '<', before)
    .returning('id')
    .execute()
  return rows.map((row) => row.id)
}

/** Queued: neither sent nor abandoned (the outbox machinery's `unfinished`). */
const queued: RowCondition = (eb, col) =>
  eb.and([eb(col('sent_at'), 'is', null), eb(col('abandoned_at'), 'is', null)])

/**
 * Claims one due mail for `lockMs`, counting the attempt (lib/outbox.ts): of several workers
 * (instances) racing for a row, exactly one gets it.
 */
export function claimDueMail(
  db: Queryable,
  dialect: Dialect,
  now: number,
  lockMs: number,
): Promise<MailOutboxRow | null> {
  return claimDue(db, {
    table: 'mail_outbox',
    unfinished: queued,
    now,
    lockMs,
    skipLocked: dialect === 'postgres',
  })
}

/*
 * A claimed mail's outcome is written only while the row is still that claim's (`attempts` is the
 * fence): a delivery that outlived its lock, while another worker took the row, changes nothing.
 */

// A mail's bodies hold a live link: once it is sent or abandoned they are not kept.
const WIPED = { text_body: null, html_body: null } as const satisfies Updateable<MailOutboxTable>

/** Marks a claimed mail abandoned (its link expired, or no key opens it) and wipes its bodies. */
export async function markMailAbandoned(db: Queryable, claim: Claim, now: number): Promise<void> {
  await settleClaim(db, 'mail_outbox', claim, { ...WIPED, abandoned_at: now })
}

/** Releases a claimed mail after a failed delivery, to be tried again at `retryAt`. */
export async function scheduleMailRetry(
  db: Queryable,
  claim: Claim,
  retryAt: number,
  reason: string,
): Promise<void> {
  await settleClaim(db, 'mail_outbox', claim, { next_attempt_at: retryAt, last_error: reason })
}

/** Marks a claimed mail sent and wipes its bodies. */
export async function markMailSent(db: Queryable, claim: Claim, now: number): Promise<void> {
  await settleClaim(db, 'mail_outbox', claim, { ...WIPED, sent_at: now, last_error: null })
}

/** How many mails a window holds, and when the oldest of them was queued (for `Retry-After`). */
export interface MailWindow {
  count: number
  oldestAt: number | null
}

/**
 * Mails queued after `since`, of one user or to one address (whoever asked for them; the address
 * compared without regard to case): the confirmation-mail caps count these.
 */
export async function countMailSince(
  db: Queryable,
  of: { userId: string } | { recipient: string },
  since: number,
): Promise<MailWindow> {
  let query = db
    .selectFrom('mail_outbox')
    .select((eb) => [eb.fn.countAll().as('count'), eb.fn.min('created_at').as('oldest_at')])
    .where('created_at', '>', since)
  query =
    'userId' in of
      ? query.where('user_id', '=', of.userId)
      : query.where(sql`lower(recipient)`, '=', of.recipient.toLowerCase())
  const row = await query.executeTakeFirstOrThrow()
  return {
    count: Number(row.count),
    oldestAt: row.oldest_at === null ? null : Number(row.oldest_at),
  }
}

/** How many mails wait for delivery, and since when the oldest has (for the metrics). */
export async function outboxStats(
  db: Queryable,
): Promise<{ queued: number; oldestQueuedAt: number | null }> {
  const row = await db
    .selectFrom('mail_outbox')
    .select((eb) => [
      eb.fn.countAll<number | string>().as('queued'),
      eb.fn.min('created_at').as('oldest'),
    ])
    .where('sent_at', 'is', null)
    .where('abandoned_at', 'is', null)
    .executeTakeFirstOrThrow()
  return {
    queued: Number(row.queued),
    oldestQueuedAt: row.oldest === null ? null : Number(row.oldest),
  }
}

export type MailState = 'queued' | 'sent' | 'abandoned'

/** Mail rows for the operator, newest first; the bodies (live links) are never read. */
export async function listMail(
  db: Queryable,
  options: { includeFinished: boolean; limit: number; userId?: string },
): Promise<
  {
    id: string
    recipient: string
    state: MailState
    createdAt: number
    attempts: number
    nextAttemptAt: number
    lastError: string | null
  }[]
> {
  let query = db
    .selectFrom('mail_outbox')
    .select([
      'id',
      'recipient',
      'created_at',
      'attempts',
      'next_attempt_at',
      'sent_at',
      'abandoned_at',
      'last_error',
    ])
    .orderBy('created_at', 'desc')
    .limit(options.limit)
  if (!options.includeFinished)
    query = query.where('sent_at', 'is', null).where('abandoned_at', 'is', null)
  if (options.userId !== undefined) query = query.where('user_id', '=', options.userId)
  const rows = await query.execute()
  return rows.map((row) => ({
    id: row.id,
    recipient: row.recipient,
    state: row.sent_at !== null ? 'sent' : row.abandoned_at !== null ? 'abandoned' : 'queued',
    createdAt: row.created_at,
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at,
    lastError: row.last_error,
  }))
}

/** A mail row as the operator sees it: never its bodies, which hold a live link. */
export interface MailView {
  id: string
  recipient: string
  subject: string
  userId: string | null
  state: MailState
  createdAt: number
  /** When its link expires: past it, the mail is abandoned rather than sent. */
  expiresAt: number
  attempts: number
  nextAttemptAt: number
  sentAt: number | null
  abandonedAt: number | null
  lastError: string | null
}

/** One page of mail in one state (or all of one user's), newest first, and how many in all. */
export async function pageMail(
  db: Queryable,
  filter: { state: MailState | null; userId?: string },
  offset: number,
  limit: number,
): Promise<{ rows: MailView[]; total: number }> {
  let query = db.selectFrom('mail_outbox')
  if (filter.state === 'queued')
    query = query.where('sent_at', 'is', null).where('abandoned_at', 'is', null)
  if (filter.state === 'sent') query = query.where('sent_at', 'is not', null)
  if (filter.state === 'abandoned') query = query.where('abandoned_at', 'is not', null)
  if (filter.userId !== undefined) query = query.where('user_id', '=', filter.userId)
  const [rows, count] = await Promise.all([
    query
      .select([
        'id',
        'recipient',
        'subject',
        'user_id',
        'created_at',
        'expires_at',
        'attempts',
        'next_attempt_at',
        'sent_at',
        'abandoned_at',
        'last_error',
      ])
      .orderBy('created_at', 'desc')
      .orderBy('id')
      .offset(offset)
      .limit(limit)
      .execute(),
    query.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
  ])
  return {
    total: Number(count.n),
    rows: rows.map((row) => ({
      id: row.id,
      recipient: row.recipient,
      subject: row.subject,
      userId: row.user_id,
      state: row.sent_at !== null ? 'sent' : row.abandoned_at !== null ? 'abandoned' : 'queued',
      createdAt: Number(row.created_at),
      expiresAt: Number(row.expires_at),
      attempts: row.attempts,
      nextAttemptAt: Number(row.next_attempt_at),
      sentAt: row.sent_at === null ? null : Number(row.sent_at),
      abandonedAt: row.abandoned_at === null ? null : Number(row.abandoned_at),
      lastError: row.last_error,
    })),
  }
}

/**
 * Makes queued mail (one, or all) due now, ending its backoff; the worker of any running instance
 * delivers it on its next round. A mail whose link has expired is not made due again: the worker
 * would only abandon it. Returns how many mails were made due.
 */
export async function retryQueuedMail(
  db: Queryable,
  now: number,
  mailId: string | null,
): Promise<number> {
  let query = db
    .updateTable('mail_outbox')
    .set({ next_attempt_at: now })
    .where('sent_at', 'is', null)
    .where('abandoned_at', 'is', null)
    .where('expires_at', '>', now)
  if (mailId !== null) query = query.where('id', '=', mailId)
  const result = await query.executeTakeFirst()
  return Number(result.numUpdatedRows)
}
