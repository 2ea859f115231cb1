import type { Kysely } from 'kysely'

// Migrations see Kysely<any> and never import application code: they must keep working as the
// application's types move on.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('users')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('open_id', 'text', (col) => col.notNull().unique())
    .addColumn('union_id', 'text')
    .addColumn('messenger_session_key_hash', 'text')
    .addColumn('university_token_hash', 'text')
    .addColumn('university_linked_at', 'bigint')
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addColumn('updated_at', 'bigint', (col) => col.notNull())
    .execute()

  await db.schema
    .createTable('sessions')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('user_id', 'text', (col) =>
      col.notNull().unique().references('users.id').onDelete('cascade'),
    )
    .addColumn('key_hash', 'text', (col) => col.notNull().unique())
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addColumn('expires_at', 'bigint', (col) => col.notNull())
    .addColumn('touched_at', 'bigint', (col) => col.notNull())
    .execute()
  await db.schema.createIndex('sessions_expires_at').on('sessions').column('expires_at').execute()

  await db.schema
    .createTable('registration_codes')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('user_id', 'text', (col) => col.notNull().references('users.id').onDelete('cascade'))
    .addColumn('code_hash', 'text', (col) => col.notNull().unique())
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addColumn('expires_at', 'bigint', (col) => col.notNull())
    .execute()
  await db.schema
    .createIndex('registration_codes_user_id')
    .on('registration_codes')
    .column('user_id')
    .execute()

  await db.schema
    .createTable('university_attempts')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('user_id', 'text', (col) => col.notNull().references('users.id').onDelete('cascade'))
    .addColumn('code_id', 'text', (col) => col.notNull())
    .addColumn('cookie_hash', 'text', (col) => col.notNull().unique())
    .addColumn('status', 'text', (col) => col.notNull())
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addColumn('expires_at', 'bigint', (col) => col.notNull())
    .addColumn('finished_at', 'bigint')
    .execute()
  await db.schema
    .createIndex('university_attempts_user_status')
    .on('university_attempts')
    .columns(['user_id', 'status'])
    .execute()

  await db.schema
    .createTable('mail_outbox')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('recipient', 'text', (col) => col.notNull())
    .addColumn('subject', 'text', (col) => col.notNull())
    .addColumn('text_body', 'text')
    .addColumn('html_body', 'text')
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addColumn('expires_at', 'bigint', (col) => col.notNull())
    .addColumn('next_attempt_at', 'bigint', (col) => col.notNull())
    .addColumn('attempts', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('locked_until', 'bigint')
    .addColumn('sent_at', 'bigint')
    .addColumn('abandoned_at', 'bigint')
    .addColumn('last_error', 'text')
    .execute()
  await db.schema
    .createIndex('mail_outbox_due')
    .on('mail_outbox')
    .columns(['sent_at', 'abandoned_at', 'next_attempt_at'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    'mail_outbox',
    'university_attempts',
    'registration_codes',
    'sessions',
    'users',
  ]) {
    await db.schema.dropTable(table).execute()
  }
}
