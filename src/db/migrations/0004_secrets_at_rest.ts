import { sql, type Kysely } from 'kysely'

/**
 * The messenger session key and the university token are kept encrypted (usable by the app's other
 * features) instead of hashed, and tier 2 is read from `university_linked_at`. Hashes cannot be
 * turned back into values, so they go; users linked today stay linked, without a usable token.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('users').addColumn('messenger_session_key', 'text').execute()
  await db.schema.alterTable('users').addColumn('university_token', 'text').execute()
  await sql`UPDATE users SET university_linked_at = NULL WHERE university_token_hash IS NULL`.execute(
    db,
  )
  await db.schema.alterTable('users').dropColumn('messenger_session_key_hash').execute()
  await db.schema.alterTable('users').dropColumn('university_token_hash').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('users').addColumn('messenger_session_key_hash', 'text').execute()
  await db.schema.alterTable('users').addColumn('university_token_hash', 'text').execute()
  await db.schema.alterTable('users').dropColumn('university_token').execute()
  await db.schema.alterTable('users').dropColumn('messenger_session_key').execute()
}
