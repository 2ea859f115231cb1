import type { Kysely } from 'kysely'

/**
 * docs/university-providers.md, "SAML": the ids of the SAML assertions campusgate accepted, kept
 * until they expire, so that no instance accepts one twice (a replayed Response links nothing).
 * Only the SHA-256 of the issuer and the id is kept. Expand-only: a new table.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('saml_assertions')
    .addColumn('id_hash', 'text', (col) => col.primaryKey())
    // Epoch milliseconds: once past, the assertion would be refused as expired anyway.
    .addColumn('expires_at', 'bigint', (col) => col.notNull())
    .execute()
  await db.schema
    .createIndex('saml_assertions_expires_at')
    .on('saml_assertions')
    .column('expires_at')
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('saml_assertions').execute()
}
