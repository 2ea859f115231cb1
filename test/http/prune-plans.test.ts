import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import SQLite from 'better-sqlite3'
import type { CompiledQuery, KyselyPlugin, RootOperationNode } from 'kysely'
import pg from 'pg'
import type { Db } from '../../src/db/database.js'
import { findExpiredSessionIds, raiseExpiryFloors } from '../../src/sessions/store.js'
import {
  migratedDatabase,
  TEST_DIALECT,
  type MigratedDatabase,
  type TestDatabase,
} from '../helpers/database.js'

// The pruner runs on the event loop of one instance every minute: its reads of `sessions` must
// search an index, never read the whole table (SQLite and, with DATABASE_URL, PostgreSQL).

/** Records every query run through it, to be explained afterwards. */
class Recorder implements KyselyPlugin {
  readonly nodes: RootOperationNode[] = []
  transformQuery({ node }: { node: RootOperationNode }): RootOperationNode {
    this.nodes.push(node)
    return node
  }
  transformResult<R>({ result }: { result: R }): Promise<R> {
    return Promise.resolve(result)
  }
}

/** The database's plan for one query, its steps joined into one line for the assertions. */
async function planOf(database: TestDatabase, query: CompiledQuery): Promise<string> {
  const parameters = [...query.parameters]
  if (TEST_DIALECT === 'sqlite') {
    const file = new SQLite(database.url.slice('sqlite:'.length), { readonly: true })
    try {
      const plan = file.prepare(`EXPLAIN QUERY PLAN ${query.sql}`).all(parameters) as {
        detail: string
      }[]
      return plan.map((step) => step.detail).join('; ')
    } finally {
      file.close()
    }
  }
  const client = new pg.Client({ connectionString: database.url })
  await client.connect()
  try {
    // On a table this small a sequential scan is cheapest; what is asked is whether an index can
    // answer the conditions at all.
    await client.query('SET enable_seqscan = off')
    const { rows } = await client.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN ${query.sql}`,
      parameters,
    )
    return rows.map((row) => row['QUERY PLAN'].trim()).join('; ')
  } finally {
    await client.end()
  }
}

describe('the pruner reads expired and aged sessions by index', () => {
  let database: MigratedDatabase
  let db: Db

  before(async () => {
    database = await migratedDatabase()
    db = database.db
  })

  after(() => database.drop())

  for (const createdBefore of [null, 1_000]) {
    it(`finds sessions without reading them all (SESSION_MAX_AGE ${createdBefore === null ? 'unset' : 'set'})`, async () => {
      const recorder = new Recorder()
      await raiseExpiryFloors(db.kysely.withPlugin(recorder), 2_000, 100)
      await findExpiredSessionIds(db.kysely.withPlugin(recorder), 2_000, createdBefore, 100)
      assert.equal(recorder.nodes.length, createdBefore === null ? 2 : 3)
      for (const node of recorder.nodes) {
        const query = db.kysely.getExecutor().compileQuery(node, { queryId: 'plan' })
        const plan = await planOf(database, query)
        if (TEST_DIALECT === 'sqlite') {
          assert.match(plan, /SEARCH sessions USING INDEX sessions_(expiry_floor|created_at)/, plan)
          assert.doesNotMatch(plan, /SCAN sessions/, plan)
        } else {
          assert.match(plan, /Index Cond: \((expiry_floor|created_at) <= /, plan)
          assert.doesNotMatch(plan, /Seq Scan on sessions/, plan)
        }
      }
    })
  }

  it('gives the expired first, then the aged, each once and no more than asked', async () => {
    const now = 10_000
    const users = ['a', 'b', 'c', 'd'].map((id) => ({ id, created_at: 1, updated_at: 1 }))
    await db.kysely.insertInto('users').values(users).execute()
    await db.kysely
      .insertInto('sessions')
      .values([
        // expired, and past the cap too
        {
          id: 's-a',
          user_id: 'a',
          key_hash: 'ha',
          created_at: 100,
          expires_at: 9_000,
          touched_at: 100,
          expiry_floor: 9_000,
        },
        // expired only
        {
          id: 's-b',
          user_id: 'b',
          key_hash: 'hb',
          created_at: 5_000,
          expires_at: 8_000,
          touched_at: 5_000,
          expiry_floor: 8_000,
        },
        // past the cap only
        {
          id: 's-c',
          user_id: 'c',
          key_hash: 'hc',
          created_at: 200,
          expires_at: 50_000,
          touched_at: 200,
          expiry_floor: 50_000,
        },
        // neither
        {
          id: 's-d',
          user_id: 'd',
          key_hash: 'hd',
          created_at: 6_000,
          expires_at: 50_000,
          touched_at: 6_000,
          expiry_floor: 50_000,
        },
      ])
      .execute()
    assert.deepEqual(await findExpiredSessionIds(db.kysely, now, null, 10), ['s-b', 's-a'])
    assert.deepEqual(await findExpiredSessionIds(db.kysely, now, 1_000, 10), ['s-b', 's-a', 's-c'])
    assert.deepEqual(await findExpiredSessionIds(db.kysely, now, 1_000, 2), ['s-b', 's-a'])
    assert.deepEqual(await findExpiredSessionIds(db.kysely, now, 1_000, 3), ['s-b', 's-a', 's-c'])
  })

  it('passes over a session that touches kept live past its floor, and raises that floor once', async () => {
    const now = 100_000
    await db.kysely
      .insertInto('users')
      .values(['e', 'f'].map((id) => ({ id, created_at: 1, updated_at: 1 })))
      .execute()
    await db.kysely
      .insertInto('sessions')
      .values([
        // registered to expire at 60_000, touched since to 150_000
        {
          id: 's-e',
          user_id: 'e',
          key_hash: 'he',
          created_at: 50_000,
          expires_at: 150_000,
          touched_at: 90_000,
          expiry_floor: 60_000,
        },
        // registered to expire at 70_000, touched to 95_000, idle since
        {
          id: 's-f',
          user_id: 'f',
          key_hash: 'hf',
          created_at: 50_000,
          expires_at: 95_000,
          touched_at: 65_000,
          expiry_floor: 70_000,
        },
      ])
      .execute()
    const floors = async () =>
      Object.fromEntries(
        (
          await db.kysely
            .selectFrom('sessions')
            .select(['id', 'expiry_floor'])
            .where('id', 'in', ['s-e', 's-f'])
            .execute()
        ).map((row) => [row.id, row.expiry_floor]),
      )
    const expired = await findExpiredSessionIds(db.kysely, now, null, 10)
    assert.ok(expired.includes('s-f'), String(expired))
    assert.ok(!expired.includes('s-e'), String(expired))
    // s-f is expired: its floor stays for the pruner to end it; s-e's rises to its expiry.
    assert.equal(await raiseExpiryFloors(db.kysely, now, 10), 1)
    assert.deepEqual(await floors(), { 's-e': 150_000, 's-f': 70_000 })
    assert.equal(await raiseExpiryFloors(db.kysely, now, 10), 0)
  })

  it('leaves no index on a column a touch writes, so a touch is a heap-only update on PostgreSQL', async () => {
    const indexed =
      TEST_DIALECT === 'sqlite'
        ? await sqliteIndexedColumns(database, 'sessions')
        : await postgresIndexedColumns(database, 'sessions')
    assert.ok(indexed.includes('key_hash') && indexed.includes('expiry_floor'), String(indexed))
    for (const written of ['expires_at', 'touched_at']) {
      assert.ok(!indexed.includes(written), `${written} is indexed: ${String(indexed)}`)
    }
  })
})

/** Every column some index of `table` holds (SQLite). */
async function sqliteIndexedColumns(database: TestDatabase, table: string): Promise<string[]> {
  const file = new SQLite(database.url.slice('sqlite:'.length), { readonly: true })
  try {
    const indexes = file.prepare(`PRAGMA index_list(${table})`).all() as { name: string }[]
    return indexes.flatMap(({ name }) =>
      (file.prepare(`PRAGMA index_info(${name})`).all() as { name: string }[]).map((c) => c.name),
    )
  } finally {
    file.close()
  }
}

/** Every column some index of `table` holds (PostgreSQL, the connection's schema). */
async function postgresIndexedColumns(database: TestDatabase, table: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: database.url })
  await client.connect()
  try {
    const { rows } = await client.query<{ column: string }>(
      `SELECT a.attname AS column FROM pg_index i
         JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
       WHERE i.indrelid = $1::regclass`,
      [table],
    )
    return rows.map((row) => row.column)
  } finally {
    await client.end()
  }
}
