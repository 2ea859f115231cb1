import { newId } from '../sessions/keys.js'
import type { Queryable } from '../sessions/store.js'
import type { Mail } from './transport.js'

/**
 * Queues a mail in the caller's transaction, so it exists exactly when the state it announces
 * does. The worker delivers it; until `expiresAt` it keeps trying.
 */
export async function enqueueMail(
  db: Queryable,
  mail: Mail,
  times: { now: number; expiresAt: number },
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
    })
    .execute()
  return id
}
