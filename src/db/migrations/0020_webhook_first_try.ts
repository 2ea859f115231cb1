import { sql, type Kysely } from 'kysely'

/**
 * WEBHOOK_RETRY_FOR counts from a delivery's first try, not from its event's creation
 * (docs/webhooks.md, "Delivery"): an event held back behind an earlier one of its user spends
 * nothing of its window while it waits. `first_tried_at` is when its window started (null: not
 * tried yet, or sent again by hand since), and the first try sets `retry_until` from it.
 * Expand-only: a column nothing older reads; an older build keeps counting from creation.
 * A delivery tried before this migration keeps the window it has, marked as started.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('webhook_deliveries').addColumn('first_tried_at', 'bigint').execute()
  await db
    .updateTable('webhook_deliveries')
    .set({
      first_tried_at: sql`(SELECT e.created_at FROM webhook_events e WHERE e.id = webhook_deliveries.event_id)`,
    })
    .where('attempts', '>', 0)
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('webhook_deliveries').dropColumn('first_tried_at').execute()
}
