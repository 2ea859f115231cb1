import { chmodSync, existsSync, mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import SQLite from 'better-sqlite3'
import { Kysely, PostgresDialect, SqliteDialect, type SqliteDatabase } from 'kysely'
import pg from 'pg'
import type { Database } from './schema.js'
import { cachingSqlite, pgQuery, preparingPool, statementNamer } from './statements.js'
import { isWriteFault } from './failures.js'
import { groupedCommits, type RunTransaction } from './grouped-commits.js'
import { inTransaction } from './transaction.js'
import { createWriteWatch, watchingWrites, type WriteWatch } from './write-health.js'

export type Dialect = 'sqlite' | 'postgres'

interface DbCommon {
  readonly kysely: Kysely<Database>
  /** PostgreSQL schema named by `?options=-c search_path=…`, where the migration tables live too. */
  readonly schema: string | null
  /**
   * Where errors of idle connections go (a PostgreSQL restart drops them). Without a listener they
   * would be uncaught and end the process; by default they are dropped, the pool reconnects.
   */
  onConnectionError(listener: (error: Error) => void): void
  /**
   * Runs `work` in a transaction, retried on a lost race (transaction.ts). On SQLite the
   * transactions handed in within one turn of the event loop share one commit
   * (grouped-commits.ts): its commit is most of a registration's cost.
   */
  readonly groupedTransaction: RunTransaction
  /** Whether writes go through, as the last ones showed (a full disk leaves reads working). */
  readonly writes: WriteWatch
  /** The SQLite file, or null (PostgreSQL, or SQLite in memory). */
  readonly sqlitePath: string | null
}

/**
 * SQLite, with what its session store runs outside Kysely (sessions/store-sqlite.ts): the key
 * check is the one query on every authenticated request, and its touches the commonest write.
 */
export interface SqliteDb extends DbCommon {
  readonly dialect: 'sqlite'
  /**
   * Reads synchronously, on the connection that writes while no transaction is open on it
   * (`keyCheckReader`), else on a second, read-only connection. Kysely runs every query on one
   * connection behind a mutex, so a key check would otherwise wait for whatever transaction holds
   * it (a registration, a mail claim, a pruning round); in WAL mode the second connection reads
   * the last committed state meanwhile. Null in memory, where a second connection would be
   * another, empty database: there reads go through Kysely.
   */
  readonly reader: SqliteReader | null
  /**
   * Short writes run synchronously on the writing connection, outside Kysely, when no transaction
   * is open on it: the key check's touches, which otherwise pay Kysely's transaction machinery
   * (its mutex, a promise per statement) several times over what SQLite spends on them
   * (docs/performance.md, "Touches at steady state").
   */
  readonly writer: SqlWriter
}

/** PostgreSQL, with the pool its session store reads on without Kysely (sessions/store-postgres.ts). */
export interface PostgresDb extends DbCommon {
  readonly dialect: 'postgres'
  /** Runs one statement on the pool, named (prepared) as Kysely's queries are: its rows, and how many it changed. */
  query<Row>(
    sql: string,
    parameters: readonly unknown[],
  ): Promise<{ rows: Row[]; rowCount: number }>
}

export type Db = SqliteDb | PostgresDb

/** Runs one read synchronously, outside Kysely's transactions; statements prepared once per SQL text. */
export interface SqliteReader {
  first<Row>(sql: string, parameters: readonly unknown[]): Row | undefined
}

/** Runs one statement on the writing connection; returns how many rows it changed. */
export type SqlRun = (sql: string, parameters: readonly unknown[]) => number

export interface SqlWriter {
  /**
   * Runs `work` now, synchronously, as one transaction of its own on the writing connection, and
   * returns true; or, when a transaction is open on it (Kysely's, open across awaits), returns
   * false without running anything, and the caller goes through Kysely. A failure rolls the
   * transaction back and is thrown, a write fault noted first (`Db.writes`).
   */
  transaction(work: (run: SqlRun) => void): boolean
}

/**
 * Nothing runs between BEGIN and COMMIT but `work`'s statements: the whole transaction is one
 * synchronous call, so no Kysely query can start inside it, and none is inside one when it
 * starts (no transaction open; a lone Kysely query is never left half run between awaits).
 */
function writerOn(
  sqlite: SQLite.Database,
  statements: SqliteDatabase,
  watch: WriteWatch,
): SqlWriter {
  const run: SqlRun = (sql, parameters) =>
    (statements.prepare(sql) as SQLite.Statement).run(parameters).changes
  return {
    transaction(work) {
      if (sqlite.inTransaction) return false
      try {
        run('begin', [])
        work(run)
        run('commit', [])
      } catch (error) {
        if (isWriteFault(error)) watch.noteFault(error)
        // SQLite rolls back by itself on a full disk or an I/O error; then there is none to end.
        if (sqlite.inTransaction) run('rollback', [])
        throw error
      }
      return true
    },
  }
}

/** Reads on one better-sqlite3 connection, statements prepared once per SQL text. */
function readerOn(statements: SqliteDatabase): SqliteReader {
  return {
    first: <Row>(sql: string, parameters: readonly unknown[]) =>
      (statements.prepare(sql) as SQLite.Statement).get(parameters) as Row | undefined,
  }
}

/**
 * The read-only connection answers only while a transaction is open on the writing one, and every
 * commit of the writer unmaps a reader's map anyway: it maps nothing.
 */
function openReader(path: string): { reader: SqliteReader; close(): void } {
  const sqlite = new SQLite(path, { readonly: true })
  sqlite.pragma('busy_timeout = 5000')
  const statements = cachingSqlite(sqlite)
  return { reader: readerOn(statements), close: () => sqlite.close() }
}

/**
 * The key check on the writing connection whenever no transaction is open on it, which is nearly
 * always: outside a transaction it reads the last committed state, as the read-only connection
 * does. SQLite drops a connection's page cache and unmaps its memory map whenever it finds that
 * another connection committed since its last read; the key check's own touches, written through
 * the writing connection, made the read-only one start cold after each of them: at 1M sessions,
 * a read twice as dear with one touch per 30 reads (docs/performance.md, "The SQLite reader"). A
 * connection's own commits leave its cache and map in place.
 * Inside a transaction (Kysely's, open across awaits) the writing connection would show that
 * transaction's uncommitted rows: then the read-only connection answers.
 */
function keyCheckReader(
  writer: SQLite.Database,
  writerStatements: SqliteDatabase,
  separate: SqliteReader,
): SqliteReader {
  const onWriter = readerOn(writerStatements)
  return {
    first: <Row>(sql: string, parameters: readonly unknown[]) =>
      writer.inTransaction
        ? separate.first<Row>(sql, parameters)
        : onWriter.first<Row>(sql, parameters),
  }
}

function searchPathOf(url: string): string | null {
  const options = new URL(url).searchParams.get('options') ?? ''
  const match = /(?:^|\s)-c\s*search_path=([A-Za-z_][A-Za-z0-9_]*)/.exec(options)
  return match?.[1] ?? null
}

const CONNECT_TIMEOUT_MS = 3000
/**
 * The key check maps up to 1 GiB of the file on the connection it reads on: its lookups land
 * anywhere in the sessions and users B-trees, and past the first 64 MiB (about 150,000 sessions)
 * every page it reads would otherwise be a `pread` and a copy into SQLite's own cache. The mapped
 * pages are the kernel's page cache, clean and shared, not memory of the process's own; the
 * kernel takes them back under pressure.
 */
const KEY_CHECK_MMAP_BYTES = 1_073_741_824
const QUERY_TIMEOUT_MS = 15_000

// int8 columns hold epoch milliseconds, well inside Number's exact range.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value))

/**
 * Opens the database named by a `DATABASE_URL`. This is the one place that knows SQLite from
 * PostgreSQL; above it, only the two session stores (sessions/store-*.ts) use what is particular
 * to each, and everything else sees `Kysely<Database>`.
 */
export function createDb(url: string, options: { poolSize: number }): Db {
  return url.startsWith('sqlite:') ? openSqlite(url) : openPostgres(url, options.poolSize)
}

function openSqlite(url: string): SqliteDb {
  const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '')
  const inMemory = path === ':memory:'
  // The file holds queued mail with live links: readable by the service's user only.
  if (!inMemory) mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
  const created = !inMemory && !existsSync(path)
  const sqlite = new SQLite(path)
  if (created) chmodSync(path, 0o600)
  // WAL lets readers proceed during a write; busy_timeout waits out a writer instead of failing.
  sqlite.pragma('journal_mode = WAL')
  sqlite.pragma('busy_timeout = 5000')
  sqlite.pragma('foreign_keys = ON')
  sqlite.pragma('synchronous = NORMAL')
  // Deleted and overwritten content is zeroed, not left in free pages for a file reader.
  sqlite.pragma('secure_delete = ON')
  // Savepoints (grouped commits) keep their statement journals in memory, not in a temp file.
  sqlite.pragma('temp_store = MEMORY')
  sqlite.pragma(`mmap_size = ${KEY_CHECK_MMAP_BYTES}`)
  // A second connection to an in-memory database would be another, empty database.
  const separate = inMemory ? null : openReader(path)
  const statements = cachingSqlite(sqlite)
  const writes = createWriteWatch()
  const kysely = new Kysely<Database>({
    dialect: watchingWrites(
      new SqliteDialect({
        database: {
          prepare: (sql) => statements.prepare(sql),
          close: () => {
            separate?.close()
            statements.close()
          },
        },
      }),
      writes,
      () => sqlite.inTransaction,
    ),
  })
  return {
    kysely,
    dialect: 'sqlite',
    schema: null,
    onConnectionError: () => undefined,
    groupedTransaction: groupedCommits(kysely),
    reader: separate === null ? null : keyCheckReader(sqlite, statements, separate.reader),
    writer: writerOn(sqlite, statements, writes),
    writes,
    sqlitePath: inMemory ? null : path,
  }
}

function openPostgres(url: string, poolSize: number): PostgresDb {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    // While PostgreSQL is unreachable, a request fails within seconds (503) instead of hanging.
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    query_timeout: QUERY_TIMEOUT_MS,
    // A connection whose peer vanished without a FIN is noticed, not kept forever.
    keepAlive: true,
  })
  let listener: (error: Error) => void = () => undefined
  // pg's advice: an idle client's error reaches the pool's 'error' event, which must be handled.
  pool.on('error', (error) => listener(error))
  // A client checked out when its connection drops emits 'error' itself; the query it runs (or
  // the next one) fails with the same error and is answered 503, so nothing more is done here.
  pool.on('connect', (client) => client.on('error', () => undefined))
  const nameOf = statementNamer()
  const writes = createWriteWatch()
  const kysely = new Kysely<Database>({
    dialect: watchingWrites(new PostgresDialect({ pool: preparingPool(pool, nameOf) }), writes),
  })
  return {
    kysely,
    dialect: 'postgres',
    schema: searchPathOf(url),
    onConnectionError: (next) => (listener = next),
    groupedTransaction: (work) => inTransaction(kysely, work),
    // The session store's touches run here too (sessions/store-postgres.ts), so their faults are
    // noted as Kysely's are.
    async query<Row>(sql: string, parameters: readonly unknown[]) {
      try {
        const { rows, rowCount } = await pool.query(pgQuery(nameOf, sql, parameters))
        return { rows: rows as Row[], rowCount: rowCount ?? 0 }
      } catch (error) {
        if (isWriteFault(error)) writes.noteFault(error)
        throw error
      }
    },
    writes,
    sqlitePath: null,
  }
}
