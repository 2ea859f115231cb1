import type { Kysely } from 'kysely'

/**
 * docs/console.md, "What each page shows": a user counts once on each day (UTC) it used its key. The mark is
 * written with the session's touch (src/sessions/store.ts) and deleted with the user on erasure.
 * No foreign key: its check would make a touch wait on the lock an erasure holds on the user,
 * while the erasure waits on the session the touch updates.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('user_active_days')
    .addColumn('user_id', 'text', (col) => col.notNull())
    .addColumn('day', 'text', (col) => col.notNull())
    .addPrimaryKeyConstraint('user_active_days_pkey', ['user_id', 'day'])
    .execute()
  // Counting by day reads this index alone (it holds both columns), never the table.
  await db.schema
    .createIndex('user_active_days_day')
    .on('user_active_days')
    .columns(['day', 'user_id'])
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('user_active_days').execute()
}
