import { createHash } from 'node:crypto'
import type SQLite from 'better-sqlite3'
import type { PostgresPool, PostgresPoolClient, SqliteDatabase, SqliteStatement } from 'kysely'
import type pg from 'pg'

/*
 * Kysely hands the driver SQL text on every query: better-sqlite3 would compile it again each time
 * and PostgreSQL would parse and plan it again each time. These wrappers keep what was compiled,
 * within a bound; the queries, their results and Kysely's one-connection mutex are unchanged.
 */

/** More distinct statements than campusgate issues; a bound all the same. */
export const STATEMENT_CACHE_SIZE = 256

/**
 * A better-sqlite3 handle whose `prepare` returns the statement it prepared before for the same
 * text, most recently used kept. Sharing a statement is safe: better-sqlite3 runs it
 * synchronously, and Kysely holds its single connection for a whole query or stream.
 */
export function cachingSqlite(
  sqlite: SQLite.Database,
  size = STATEMENT_CACHE_SIZE,
): SqliteDatabase {
  const statements = new Map<string, SqliteStatement>()
  return {
    prepare(sql) {
      let statement = statements.get(sql)
      if (statement === undefined) {
        statement = sqlite.prepare(sql)
        if (statements.size >= size) statements.delete(statements.keys().next().value!)
      } else {
        statements.delete(sql)
      }
      statements.set(sql, statement)
      return statement
    },
    close: () => sqlite.close(),
  }
}

/**
 * The name a statement is prepared under on PostgreSQL, or undefined to leave it unnamed: only
 * parameterised statements are named, and none with `*` in it (a plan prepared for `SELECT *`
 * or `RETURNING *` fails once another instance's migration adds a column).
 */
function statementName(
  names: Map<string, string | undefined>,
  sql: string,
  size: number,
): string | undefined {
  if (names.has(sql)) return names.get(sql)
  if (names.size >= size) return undefined
  const name = sql.includes('*')
    ? undefined
    : `cg_${createHash('sha256').update(sql).digest('hex').slice(0, 24)}`
  names.set(sql, name)
  return name
}

/**
 * A pg pool whose clients run parameterised statements as named (server-side prepared)
 * statements: PostgreSQL parses and plans each once per connection instead of on every query.
 * At most `size` distinct statements are ever named; any beyond run unnamed as before.
 */
export function preparingPool(pool: pg.Pool, size = STATEMENT_CACHE_SIZE): PostgresPool {
  const names = new Map<string, string | undefined>()
  // Kysely keys its connection state by client object: one wrapper per pg client.
  const wrappers = new WeakMap<pg.PoolClient, PostgresPoolClient>()
  const wrap = (client: pg.PoolClient): PostgresPoolClient => {
    let wrapper = wrappers.get(client)
    if (wrapper === undefined) {
      wrapper = {
        query: ((sql: unknown, parameters?: readonly unknown[]) => {
          // Kysely's streaming passes a cursor object: not ours to name.
          if (typeof sql !== 'string') return client.query(sql as never)
          const values = parameters === undefined ? [] : [...parameters]
          const name = values.length > 0 ? statementName(names, sql, size) : undefined
          return client.query(
            name === undefined ? { text: sql, values } : { name, text: sql, values },
          )
        }) as unknown as PostgresPoolClient['query'],
        release: () => client.release(),
      }
      wrappers.set(client, wrapper)
    }
    return wrapper
  }
  return {
    connect: async () => wrap(await pool.connect()),
    end: () => pool.end(),
  }
}
