import { PostgresAdapter, sql, type Kysely } from 'kysely'

/**
 * Touches write no indexed column, so that on PostgreSQL they are heap-only (HOT) updates: an
 * `UPDATE` of an indexed column adds an entry to every index of the table, five for `sessions`,
 * on pages scattered across all sessions (docs/performance.md, "Touches at steady state"). The
 * pruner found expired sessions by an index on `expires_at`, which every touch writes; it now
 * searches `expiry_floor`, a lower bound of `expires_at` that touches leave alone and the pruner
 * raises (`sessions/store.ts`). Pages keep a tenth free for the new versions a touch writes beside
 * the old.
 */
export async function up(db: Kysely<any>): Promise<void> {
  // 0 is a floor of any expiry: a row written without one is found by the pruner and raised.
  await db.schema
    .alterTable('sessions')
    .addColumn('expiry_floor', 'bigint', (col) => col.notNull().defaultTo(0))
    .execute()
  await db
    .updateTable('sessions')
    .set({ expiry_floor: sql`expires_at` })
    .execute()
  await db.schema.dropIndex('sessions_expires_at').execute()
  await db.schema
    .createIndex('sessions_expiry_floor')
    .on('sessions')
    .column('expiry_floor')
    .execute()
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`ALTER TABLE sessions SET (fillfactor = 90)`.execute(db)
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`ALTER TABLE sessions RESET (fillfactor)`.execute(db)
  }
  await db.schema.dropIndex('sessions_expiry_floor').execute()
  await db.schema.createIndex('sessions_expires_at').on('sessions').column('expires_at').execute()
  await db.schema.alterTable('sessions').dropColumn('expiry_floor').execute()
}
