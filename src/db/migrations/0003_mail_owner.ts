import type { Kysely } from 'kysely'

/**
 * Ties a queued confirmation mail to its user and code: ending the code abandons the mail, and
 * erasing the user deletes it, address included.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('mail_outbox').addColumn('user_id', 'text').execute()
  await db.schema.alterTable('mail_outbox').addColumn('registration_code_id', 'text').execute()
  await db.schema.createIndex('mail_outbox_user_id').on('mail_outbox').column('user_id').execute()
  await db.schema
    .createIndex('mail_outbox_registration_code_id')
    .on('mail_outbox')
    .column('registration_code_id')
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('mail_outbox_registration_code_id').execute()
  await db.schema.dropIndex('mail_outbox_user_id').execute()
  await db.schema.alterTable('mail_outbox').dropColumn('registration_code_id').execute()
  await db.schema.alterTable('mail_outbox').dropColumn('user_id').execute()
}
