import { PostgresAdapter, sql } from 'kysely'
import type { Queryable } from './schema.js'

/**
 * Serializes the transactions that take the same `name`, until each commits or rolls back: for a
 * decision no row can hold a lock on yet (two first logins that share a unionid, docs/identities.md).
 * PostgreSQL: a transaction-scoped advisory lock on the name's hash. SQLite needs none: one
 * transaction writes at a time. Whether a lock was taken, so that what was read before it is read
 * again (another transaction may have committed while this one waited).
 */
export async function lockName(trx: Queryable, name: string): Promise<boolean> {
  if (!(trx.getExecutor().adapter instanceof PostgresAdapter)) return false
  await sql`SELECT pg_advisory_xact_lock(hashtextextended(${name}, 0))`.execute(trx)
  return true
}
