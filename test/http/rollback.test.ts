import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import { createDb, type Db } from '../../src/db/database.js'
import {
  knownMigrations,
  migrateTo,
  migrateToLatest,
  pendingMigrations,
} from '../../src/db/migrate.js'
import { freshDatabase, tablesOf, type TestDatabase } from '../helpers/database.js'
import { spawnService, waitUntilServing, type ServiceProcess } from '../helpers/process.js'
import { freePort } from '../helpers/service.js'

const NEWER = '9999_from_a_newer_release'

/** Every table and column of the database's schema (not Kysely's own), sorted. */
async function columnsOf(db: Db): Promise<string[]> {
  return (await tablesOf(db))
    .flatMap((table) => table.columns.map((column) => `${table.name}.${column.name}`))
    .sort()
}

/** A migrated database; `change` then edits its migration table as another release would. */
async function migrated(change?: (db: Db) => Promise<void>): Promise<TestDatabase> {
  const database = await freshDatabase()
  const db = createDb(database.url, { poolSize: 1 })
  try {
    await migrateToLatest(db)
    await change?.(db)
  } finally {
    await db.kysely.destroy()
  }
  return database
}

/** A newer release's migration, applied: a row this build does not know. */
async function addNewer(db: Db): Promise<void> {
  const table = db.schema === null ? 'kysely_migration' : `${db.schema}.kysely_migration`
  await sql`INSERT INTO ${sql.table(table)} (name, timestamp) VALUES (${NEWER}, ${new Date().toISOString()})`.execute(
    db.kysely,
  )
}

/** The command (src/main.ts) with `args`, in a directory of its own; resolves once it exited. */
async function campusgate(database: TestDatabase, ...args: string[]): Promise<ServiceProcess> {
  const cwd = mkdtempSync(join(tmpdir(), 'campusgate-rollback-'))
  const run = spawnService({ DATABASE_URL: database.url, LOG_LEVEL: 'info' }, { cwd, args })
  await run.exited
  rmSync(cwd, { recursive: true, force: true })
  return run
}

describe('upgrades and rollbacks', () => {
  it('a build serves, ready, on a database a newer release migrated, and warns naming the migrations it does not know', async () => {
    const database = await migrated(addNewer)
    const cwd = mkdtempSync(join(tmpdir(), 'campusgate-rollback-'))
    const port = await freePort()
    const run = spawnService(
      { PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: database.url, LOG_LEVEL: 'info' },
      { cwd },
    )
    try {
      await waitUntilServing(run, `http://127.0.0.1:${port}/readyz`)
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`)
      assert.deepEqual(await ready.json(), { status: 'ready' })
      const warning = run
        .stdout()
        .split('\n')
        .filter((line) => line.includes('"unknownMigrations"'))
        .map((line) => JSON.parse(line) as { level: number; unknownMigrations: string[] })
      assert.equal(warning.length, 1, run.stdout())
      assert.equal(warning[0].level, 40)
      assert.deepEqual(warning[0].unknownMigrations, [NEWER])
      run.child.kill('SIGTERM')
      assert.equal(await run.exited, 0)
    } finally {
      run.child.kill('SIGKILL')
      rmSync(cwd, { recursive: true, force: true })
      await database.drop()
    }
  })

  it('a build refuses to start on a newer schema that lacks a migration it needs, naming both', async () => {
    const database = await migrated(async (db) => {
      await addNewer(db)
      const table = db.schema === null ? 'kysely_migration' : `${db.schema}.kysely_migration`
      await sql`DELETE FROM ${sql.table(table)} WHERE name = '0018_console_list_indexes'`.execute(
        db.kysely,
      )
    })
    try {
      const run = await campusgate(database, 'migrate')
      assert.equal(run.child.exitCode, 1)
      assert.match(run.stderr(), new RegExp(`${NEWER}.*0018_console_list_indexes`))
    } finally {
      await database.drop()
    }
  })

  it('migrate --to NAME runs the down migrations to NAME, leaves the schema of NAME, and migrate goes back up', async () => {
    const database = await migrated()
    const before = await freshDatabase()
    const db = createDb(database.url, { poolSize: 1 })
    const reference = createDb(before.url, { poolSize: 1 })
    try {
      const latest = await columnsOf(db)
      await migrateTo(reference, '0014_console_roles')
      const down = await campusgate(database, 'migrate', '--to', '0014_console_roles')
      assert.equal(down.child.exitCode, 0, down.stderr())
      // Every migration after 0014, newest first.
      const after = knownMigrations().filter((name) => name > '0014_console_roles')
      assert.ok(after.includes('0015_identities'))
      assert.equal(
        down.stdout(),
        `ran ${[...after].reverse().join(', ')}; schema is at 0014_console_roles\n`,
      )
      assert.deepEqual(await columnsOf(db), await columnsOf(reference))
      assert.ok(!(await columnsOf(db)).some((column) => column.startsWith('identities.')))
      assert.deepEqual(await pendingMigrations(db), after)

      const up = await campusgate(database, 'migrate')
      assert.equal(up.child.exitCode, 0, up.stderr())
      assert.deepEqual(await pendingMigrations(db), [])
      assert.deepEqual(await columnsOf(db), latest)
    } finally {
      await db.kysely.destroy()
      await reference.kysely.destroy()
      await database.drop()
      await before.drop()
    }
  })

  it('migrate --to refuses a name this build does not know, and a database a newer release migrated', async () => {
    const database = await migrated()
    try {
      const unknownName = await campusgate(database, 'migrate', '--to', '0099_nothing')
      assert.equal(unknownName.child.exitCode, 1)
      assert.match(unknownName.stderr(), /^campusgate migrate: no migration named 0099_nothing/)

      const db = createDb(database.url, { poolSize: 1 })
      try {
        await addNewer(db)
        const ahead = await campusgate(database, 'migrate', '--to', '0014_console_roles')
        assert.equal(ahead.child.exitCode, 1)
        assert.match(ahead.stderr(), new RegExp(`does not know \\(${NEWER}\\)`))
        // Nothing ran.
        assert.deepEqual(await pendingMigrations(db), [])
      } finally {
        await db.kysely.destroy()
      }
    } finally {
      await database.drop()
    }
  })
})
