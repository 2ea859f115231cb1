import type { Kysely } from 'kysely'

/**
 * The operator console (docs/console.md): single-use sign-in links and the console's
 * sessions. Only SHA-256 hashes of their secrets are stored, as for session keys.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('console_sign_in_tokens')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('token_hash', 'text', (col) => col.notNull().unique())
    .addColumn('operator', 'text', (col) => col.notNull())
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addColumn('expires_at', 'bigint', (col) => col.notNull())
    .addColumn('used_at', 'bigint')
    .execute()
  await db.schema
    .createTable('console_sessions')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('token_hash', 'text', (col) => col.notNull().unique())
    .addColumn('operator', 'text', (col) => col.notNull())
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addColumn('last_seen_at', 'bigint', (col) => col.notNull())
    .execute()
  await db.schema
    .createIndex('console_sessions_operator')
    .on('console_sessions')
    .column('operator')
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('console_sessions').execute()
  await db.schema.dropTable('console_sign_in_tokens').execute()
}
