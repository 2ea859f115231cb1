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

/** The name a statement is prepared under on PostgreSQL, or undefined to leave it unnamed. */
export type StatementNamer = (sql: string, parameterCount: number) => string | undefined

/**
 * Names parameterised statements, none with `*` in it (a plan prepared for `SELECT *` or
 * `RETURNING *` fails once another instance's migration adds a column), and at most `size` of
 * them; any beyond run unnamed as before.
 */
export function statementNamer(size = STATEMENT_CACHE_SIZE): StatementNamer {
  const names = new Map<string, string | undefined>()
  return (sql, parameterCount) => {
    if (parameterCount === 0) return undefined
    if (names.has(sql)) return names.get(sql)
    if (names.size >= size) return undefined
    const name = sql.includes('*')
      ? undefined
      : `cg_${createHash('sha256').update(sql).digest('hex').slice(0, 24)}`
    names.set(sql, name)
    return name
  }
}

/** A parameterised query for pg, named when `nameOf` names it. */
export function pgQuery(
  nameOf: StatementNamer,
  sql: string,
  parameters: readonly unknown[],
): pg.QueryConfig {
  const values = [...parameters]
  const name = nameOf(sql, values.length)
  return name === undefined ? { text: sql, values } : { name, text: sql, values }
}

/**
 * A pg pool whose clients run parameterised statements as named (server-side prepared)
 * statements: PostgreSQL parses and plans each once per connection instead of on every query.
 * At most `size` distinct statements are ever named; any beyond run unnamed as before.
 */
export function preparingPool(
  pool: pg.Pool,
  nameOf: StatementNamer = statementNamer(),
): PostgresPool {
  // Kysely keys its connection state by client object: one wrapper per pg client.
  const wrappers = new WeakMap<pg.PoolClient, PostgresPoolClient>()
  const wrap = (client: pg.PoolClient): PostgresPoolClient => {
    let wrapper = wrappers.get(client)
    if (wrapper === undefined) {
      wrapper = {
        query: ((sql: unknown, parameters?: readonly unknown[]) => {
          // Kysely's streaming passes a cursor object: not ours to name.
          if (typeof sql !== 'string') return client.query(sql as never)
          return client.query(pgQuery(nameOf, sql, parameters ?? []))
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
