import type { Kysely } from 'kysely'

/** The audit trail: who did what, when and from where; never a secret (src/audit). */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('audit_events')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('at', 'bigint', (col) => col.notNull())
    .addColumn('type', 'text', (col) => col.notNull())
    .addColumn('actor', 'text', (col) => col.notNull())
    .addColumn('user_id', 'text')
    .addColumn('open_id', 'text')
    .addColumn('ip', 'text')
    .addColumn('detail', 'text')
    .execute()
  await db.schema.createIndex('audit_events_at').on('audit_events').columns(['at', 'id']).execute()
  await db.schema.createIndex('audit_events_open_id').on('audit_events').column('open_id').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('audit_events').execute()
}
