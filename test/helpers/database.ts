import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
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
