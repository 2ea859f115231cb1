import type { Compilable, CompiledQuery, QueryResult } from 'kysely'
import type { Queryable } from './schema.js'
import { databaseOf } from './transaction.js'

export interface Precompiled<Args extends unknown[], Row> {
  (db: Queryable, ...args: Args): Promise<QueryResult<Row>>
  /**
   * Its SQL and parameters for these arguments, to run outside Kysely (the session stores'
   * reader and writer, `Db` in database.ts).
   */
  bind(db: Queryable, ...args: Args): CompiledQuery<Row>
}

/** `limit ?` (SQLite) or `offset $2` (PostgreSQL): a LIMIT or OFFSET bound as a parameter. */
const BOUND_LIMIT = /\b(?:limit|offset)\s+(?:\?|\$\d+)/i

/**
 * A query built with Kysely once per database handle and then only run: the builder and the SQL
 * compiler stay off the hot path, and the SQL text is the same on every call, so the statement
 * caches in `statements.ts` keep it prepared. Queries run through Kysely as before (same
 * connection handling, same transactions).
 *
 * `build` receives stand-ins for the arguments and must use each one only as a bound value, e.g.
 * `.where('key_hash', '=', keyHash)`: the compiled parameters are matched back to the arguments.
 * A LIMIT or OFFSET is written into the SQL (`.limit(sql.lit(16))`), never bound: SQLite plans a
 * statement whose LIMIT is a parameter anew every time it runs (docs/performance.md, "Registration
 * and commits"), which would undo what compiling once is for.
 */
export function precompiled<Args extends unknown[], Row>(
  build: (db: Queryable, ...args: Args) => Compilable<Row>,
  arity: Args['length'],
): Precompiled<Args, Row> {
  const compiledFor = new WeakMap<Queryable, { query: CompiledQuery<Row>; slots: number[] }>()

  function compile(db: Queryable): { query: CompiledQuery<Row>; slots: number[] } {
    const standIns = Array.from(
      { length: arity },
      (_, i) => `\u0000precompiled argument ${i}\u0000`,
    )
    const query = build(db, ...(standIns as Args)).compile()
    if (BOUND_LIMIT.test(query.sql)) {
      throw new Error(
        `precompiled query binds its LIMIT or OFFSET; write it with sql.lit: ${query.sql}`,
      )
    }
    // slots[p] is the argument bound at parameter p, or -1 for a value fixed by the query itself.
    const slots = query.parameters.map((value) => standIns.indexOf(value as string))
    standIns.forEach((_, i) => {
      if (!slots.includes(i)) {
        throw new Error(`precompiled query does not bind argument ${i} as a value: ${query.sql}`)
      }
    })
    return { query, slots }
  }

  function bind(db: Queryable, args: Args): CompiledQuery<Row> {
    // Compiled once per database: a transaction compiles as the database it was opened on.
    const database = databaseOf(db)
    let compiled = compiledFor.get(database)
    if (compiled === undefined) {
      compiled = compile(database)
      compiledFor.set(database, compiled)
    }
    const { query, slots } = compiled
    const parameters = slots.map((slot, p) => (slot === -1 ? query.parameters[p] : args[slot]))
    return { ...query, parameters }
  }

  const run = (db: Queryable, ...args: Args) => db.executeQuery<Row>(bind(db, args))
  return Object.assign(run, { bind: (db: Queryable, ...args: Args) => bind(db, args) })
}
