import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import pg from 'pg'
import { createDb } from '../../src/db/database.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { freshDatabase, TEST_DIALECT } from '../helpers/database.js'

describe('migrations', () => {
  it('PostgreSQL: migrate while another client drops schemas and columns of its own on the same database', async (t) => {
    if (TEST_DIALECT !== 'postgres') return t.skip('PostgreSQL only')
    // Kysely's migrator looks among every schema of the database; one dropped meanwhile must not
    // fail a start-up whose own schema is there (as when other tenants come and go).
    const admin = new pg.Client({ connectionString: process.env.DATABASE_URL })
    await admin.connect()
    let churning = true
    let churned = 0
    const churn = (async () => {
      while (churning) {
        const name = `cg_churn_${process.pid}_${churned++}`
        await admin.query(`CREATE SCHEMA ${name}`)
        await admin.query(`CREATE TABLE ${name}.t (id int, holder text, owner text)`)
        // A column dropped under the migrator's look fails it with undefined_column, naming no schema.
        await admin.query(`ALTER TABLE ${name}.t DROP COLUMN holder`)
        await admin.query(`ALTER TABLE ${name}.t RENAME COLUMN owner TO held_by`)
        await admin.query(`DROP SCHEMA ${name} CASCADE`)
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
    })()
    try {
      for (let round = 0; round < 8; round += 1) {
        const database = await freshDatabase()
        const db = createDb(database.url, { poolSize: 2 })
        try {
          assert.ok((await migrateToLatest(db)).length > 0)
        } finally {
          await db.kysely.destroy()
          await database.drop()
        }
      }
    } finally {
      churning = false
      await churn
      await admin.end()
    }
    assert.ok(churned > 0)
  })
})
