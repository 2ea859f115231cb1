import { sql, type Kysely } from 'kysely'

/**
 * The operator console's reads at 100,000 users (docs/console.md, "Speed"). Indexes only: nothing
 * an older build reads or writes changes, so it runs before or after that build alike.
 * - `users_created_at`: the users list, newest first, reads its page from the index (backwards)
 *   instead of sorting every user.
 * - `audit_events_user_id`: a user's page reads its audit trail by openId or user id; without it,
 *   the user id half read the whole trail.
 * - `mail_outbox_recipient_lower`: the users search finds the exact address a user asked mail
 *   for, in any case, without reading every mail.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex('users_created_at')
    .on('users')
    .columns(['created_at', 'id'])
    .execute()
  await db.schema.createIndex('audit_events_user_id').on('audit_events').column('user_id').execute()
  await db.schema
    .createIndex('mail_outbox_recipient_lower')
    .on('mail_outbox')
    .expression(sql`lower(recipient)`)
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('mail_outbox_recipient_lower').execute()
  await db.schema.dropIndex('audit_events_user_id').execute()
  await db.schema.dropIndex('users_created_at').execute()
}
