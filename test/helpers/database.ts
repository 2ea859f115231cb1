import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import { sql } from 'kysely'
import pg from 'pg'
import { createDb, type Db, type SqliteDb } from '../../src/db/database.js'
import { migrateToLatest } from '../../src/db/migrate.js'

/** Which database the HTTP suite runs on: PostgreSQL when DATABASE_URL says so, else SQLite. */
export const TEST_DIALECT: 'sqlite' | 'postgres' = /^postgres(ql)?:\/\//.test(
  process.env.DATABASE_URL ?? '',
)
  ? 'postgres'
  : 'sqlite'

export interface TestDatabase {
  url: string
  drop(): Promise<void>
}

/**
 * A database nobody else uses: a fresh SQLite file, or a fresh schema on the PostgreSQL server
 * of DATABASE_URL (selected through the connection's search_path).
 */
export async function freshDatabase(): Promise<TestDatabase> {
  if (TEST_DIALECT === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'campusgate-test-'))
    return {
      url: `sqlite:${join(dir, 'test.db')}`,
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    }
  }
  const server = process.env.DATABASE_URL!
  const schema = `cg_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`
  const admin = new pg.Client({ connectionString: server })
  await admin.connect()
  await admin.query(`CREATE SCHEMA ${schema}`)
  await admin.end()
  const url = new URL(server)
  url.searchParams.set('options', `-c search_path=${schema}`)
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: server })
      await client.connect()
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await client.end()
    },
  }
}

/** A fresh database (`freshDatabase`), migrated, with a connection of its own. */
export interface MigratedDatabase extends TestDatabase {
  db: Db
}

/** `freshDatabase` migrated to the latest schema; `drop` closes the connection first. */
export async function migratedDatabase(): Promise<MigratedDatabase> {
  const database = await freshDatabase()
  const db = createDb(database.url, { poolSize: 2 })
  await migrateToLatest(db)
  return {
    url: database.url,
    db,
    async drop() {
      await db.kysely.destroy()
      await database.drop()
    },
  }
}

/** A table of a database's own schema, as the migration tests compare them. */
export interface TableShape {
  name: string
  columns: { name: string; isNullable: boolean }[]
}

/**
 * The tables of `db`'s own schema (not Kysely's migration tables), with their columns in order.
 * On PostgreSQL they are read from the catalog for that schema alone: Kysely's introspector reads
 * the tables of every schema, and another test file dropping its schema meanwhile fails that read
 * ("schema … does not exist").
 */
export async function tablesOf(db: Db): Promise<TableShape[]> {
  if (db.schema === null) {
    return (await db.kysely.introspection.getTables()).map((table) => ({
      name: table.name,
      columns: table.columns.map(({ name, isNullable }) => ({ name, isNullable })),
    }))
  }
  const { rows } = await sql<{ table: string; column: string; nullable: boolean }>`
    SELECT c.relname AS "table", a.attname AS "column", NOT a.attnotnull AS "nullable"
    FROM pg_catalog.pg_attribute a
    JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = ${db.schema} AND c.relkind IN ('r', 'p', 'v') AND a.attnum > 0
      AND NOT a.attisdropped AND c.relname NOT IN ('kysely_migration', 'kysely_migration_lock')
    ORDER BY c.relname, a.attnum`.execute(db.kysely)
  const tables = new Map<string, TableShape>()
  for (const row of rows) {
    let table = tables.get(row.table)
    if (table === undefined) {
      table = { name: row.table, columns: [] }
      tables.set(row.table, table)
    }
    table.columns.push({ name: row.column, isNullable: row.nullable })
  }
  return [...tables.values()]
}

/** `url` with more PostgreSQL connection options (`-c name=value`) after those it has. */
export function withOptions(url: string, options: string): string {
  const withMore = new URL(url)
  withMore.searchParams.set('options', `${withMore.searchParams.get('options') ?? ''} ${options}`)
  return withMore.toString()
}

/** A SQLite database (createDb of a `sqlite:` URL), with what only SQLite has. */
export function openSqlite(url: string): SqliteDb {
  const db = createDb(url, { poolSize: 1 })
  if (db.dialect !== 'sqlite') throw new Error(`${url} is not a SQLite database`)
  return db
}

export interface SqliteFile {
  db: SqliteDb
  /** A second, read-only connection: sees only what was committed. */
  outside: SQLite.Database
  /** The ids of the users committed, in order. */
  committedUsers(): string[]
  close(): Promise<void>
}

/** A migrated SQLite file of its own, for tests of what reaches the file and when. */
export async function sqliteFile(): Promise<SqliteFile> {
  const dir = mkdtempSync(join(tmpdir(), 'campusgate-file-'))
  const path = join(dir, 'test.db')
  const db = openSqlite(`sqlite:${path}`)
  await migrateToLatest(db)
  const outside = new SQLite(path, { readonly: true })
  return {
    db,
    outside,
    committedUsers: () =>
      (outside.prepare('select id from users order by id').all() as { id: string }[]).map(
        (row) => row.id,
      ),
    async close() {
      outside.close()
      await db.kysely.destroy()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
