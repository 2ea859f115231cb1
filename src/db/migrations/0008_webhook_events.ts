import type { Kysely } from 'kysely'

/**
 * Lifecycle events (webhooks): each event once, and one delivery row per endpoint it is addressed
 * to. Not foreign keys to `users`: `user.erased` outlives the user it announces.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('webhook_events')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('user_id', 'text', (col) => col.notNull())
    // The order of the user's events: written under the user's row lock, so it is the order
    // their changes committed in, whatever the instances' clocks say.
    .addColumn('seq', 'integer', (col) => col.notNull())
    .addColumn('type', 'text', (col) => col.notNull())
    .addColumn('body', 'text', (col) => col.notNull())
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addUniqueConstraint('webhook_events_user_seq', ['user_id', 'seq'])
    .execute()
  await db.schema
    .createIndex('webhook_events_created_at')
    .on('webhook_events')
    .column('created_at')
    .execute()

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('event_id', 'text', (col) =>
      col.notNull().references('webhook_events.id').onDelete('cascade'),
    )
    .addColumn('endpoint', 'text', (col) => col.notNull())
    .addColumn('user_id', 'text', (col) => col.notNull())
    .addColumn('seq', 'integer', (col) => col.notNull())
    .addColumn('state', 'text', (col) => col.notNull())
    .addColumn('attempts', 'integer', (col) => col.notNull())
    .addColumn('next_attempt_at', 'bigint', (col) => col.notNull())
    .addColumn('retry_until', 'bigint', (col) => col.notNull())
    .addColumn('locked_until', 'bigint')
    .addColumn('last_error', 'text')
    .addColumn('finished_at', 'bigint')
    .addUniqueConstraint('webhook_deliveries_event_endpoint', ['event_id', 'endpoint'])
    .execute()
  await db.schema
    .createIndex('webhook_deliveries_due')
    .on('webhook_deliveries')
    .columns(['state', 'next_attempt_at'])
    .execute()
  await db.schema
    .createIndex('webhook_deliveries_order')
    .on('webhook_deliveries')
    .columns(['endpoint', 'user_id', 'seq'])
    .execute()
  // The pruner looks for lapsed university links (UNIVERSITY_LINK_MAX_AGE) to announce them.
  await db.schema
    .createIndex('users_university_linked_at')
    .on('users')
    .column('university_linked_at')
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('users_university_linked_at').execute()
  await db.schema.dropTable('webhook_deliveries').execute()
  await db.schema.dropTable('webhook_events').execute()
}
