import type { Kysely } from 'kysely'

/**
 * A person an operator suspended (docs/console.md, "Suspending a user"): when, and the reason they
 * gave. Expand only: two nullable columns that an older build neither reads nor writes, so it runs
 * before or after that build alike; its down drops them (and with them every suspension).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('users').addColumn('suspended_at', 'bigint').execute()
  await db.schema.alterTable('users').addColumn('suspension_reason', 'text').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('users').dropColumn('suspension_reason').execute()
  await db.schema.alterTable('users').dropColumn('suspended_at').execute()
}
