import { newId } from '../lib/secrets.js'
import type { Queryable } from '../db/schema.js'
import type { Mail } from './transport.js'

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
export async function abandonMailForCodes(
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

/** Deletes every mail row of a user, sent or not (erasure). */
export async function deleteMailOfUser(db: Queryable, userId: string): Promise<void> {
  await db.deleteFrom('mail_outbox').where('user_id', '=', userId).execute()
}

/** Deletes delivered or abandoned mail rows (their bodies already wiped) queued before `before`. */
export async function pruneFinishedMail(db: Queryable, before: number): Promise<number> {
  const result = await db
    .deleteFrom('mail_outbox')
    .where((eb) => eb.or([eb('sent_at', 'is not', null), eb('abandoned_at', 'is not', null)]))
    .where('created_at', '<', before)
    .executeTakeFirst()
  return Number(result.numDeletedRows)
}
