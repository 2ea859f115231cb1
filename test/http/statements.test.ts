import assert from 'node:assert/strict'
import { insertPerson, userIdOf } from '../helpers/people.js'
import { after, before, describe, it } from 'node:test'
import SQLite from 'better-sqlite3'
import { sql } from 'kysely'
import pg from 'pg'
import type { Clock } from '../../src/clock.js'
import { createDb, type Db, type PostgresDb } from '../../src/db/database.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { precompiled } from '../../src/db/precompiled.js'
import { inTransaction } from '../../src/db/transaction.js'
import { cachingSqlite, preparingPool, statementNamer } from '../../src/db/statements.js'
import { rowToSession, sessionByKeyHash, touchSession } from '../../src/sessions/rows.js'
import { createSessionStore } from '../../src/sessions/store.js'
import {
  KEY_CHECK_BATCH_MAX,
  sessionsByKeyHashes,
  touchesAndMarks,
} from '../../src/sessions/store-postgres.js'
import type { TouchRule } from '../../src/sessions/touch-rule.js'
import { logLines } from '../helpers/logs.js'
import { freshDatabase, TEST_DIALECT, withOptions, type TestDatabase } from '../helpers/database.js'
import { call, startService } from '../helpers/service.js'
import { logout, registerMessenger, startStack, type Stack } from '../helpers/stack.js'
import { hashSecret } from '../../src/lib/secrets.js'

// The hot path's statement handling: the same answers as plain Kysely, statements compiled and
// prepared once, within bounds (runs on SQLite and, with DATABASE_URL, on PostgreSQL).

/** A rule under which no key check of these tests falls due a touch (at 1_500, same UTC day). */
const NOTHING_DUE: TouchRule = { ttlMs: 1_000, intervalMs: 1_000_000, maxAgeMs: null }

/** A clock standing at `at`. */
const at = (ms: number): Clock => ({ now: () => new Date(ms) })

/**
 * `db` whose statements outside Kysely are recorded: the keys each read asked for; optionally
 * failing the first.
 */
function countingQueries(
  db: PostgresDb,
  options: { failFirst?: boolean } = {},
): { db: PostgresDb; batches: string[][] } {
  const batches: string[][] = []
  return {
    batches,
    db: {
      ...db,
      query: <Row>(text: string, parameters: readonly unknown[]) => {
        // A batch binds its keys as one array; a key check alone in its turn binds its key.
        const keys = parameters.find(Array.isArray) as string[] | undefined
        batches.push(keys === undefined ? [parameters[0] as string] : [...keys])
        if (options.failFirst === true && batches.length === 1) {
          return Promise.reject(new Error('connection terminated'))
        }
        return db.query<Row>(text, parameters)
      },
    },
  }
}

/**
 * Asserts that `text` is prepared by name on `single`'s one connection and kept one generic plan
 * over its `executions`: PostgreSQL tries five custom plans before it weighs the generic one
 * (plancache.c).
 */
async function assertOneGenericPlan(
  single: PostgresDb,
  text: string,
  executions: number,
): Promise<void> {
  const { rows } = await single.query<{ generic_plans: string; custom_plans: string }>(
    'SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1',
    [text],
  )
  assert.equal(rows.length, 1, 'prepared by name')
  assert.ok(Number(rows[0].custom_plans) <= 5, `custom plans: ${rows[0].custom_plans}`)
  assert.equal(Number(rows[0].generic_plans) + Number(rows[0].custom_plans), executions)
}

/**
 * Runs `work` with `count` more sessions of user u1 in the table, analysed: planned against a few
 * rows, PostgreSQL finds its generic plan as cheap as any custom one whatever the statement, so a
 * test of which plan it keeps needs a table of the size where a custom plan looks cheaper.
 */
async function withFillerSessions(db: Db, count: number, work: () => Promise<void>): Promise<void> {
  await sql`INSERT INTO sessions (id, user_id, key_hash, created_at, expires_at, touched_at)
    SELECT 'filler-' || n, 'u1', 'filler-' || n, 1000, 5000, 1000
    FROM generate_series(1, ${count}) AS n`.execute(db.kysely)
  await sql`ANALYZE sessions`.execute(db.kysely)
  try {
    await work()
  } finally {
    await sql`DELETE FROM sessions WHERE id LIKE 'filler-%'`.execute(db.kysely)
  }
}

describe('precompiled queries and statement caches', () => {
  let database: TestDatabase
  let db: Db

  before(async () => {
    database = await freshDatabase()
    db = createDb(database.url, { poolSize: 2 })
    await migrateToLatest(db)
    const now = 1_000
    await insertPerson(db.kysely, { id: 'u1', openId: 'o1', createdAt: now })
    await db.kysely
      .insertInto('sessions')
      .values({
        id: 's1',
        user_id: 'u1',
        identity_id: 'u1-identity',
        key_hash: 'h1',
        created_at: now,
        expires_at: 5_000,
        touched_at: now,
        device: 'Test/1.0',
      })
      .execute()
  })

  after(async () => {
    await db.kysely.destroy()
    await database.drop()
  })

  const S1 = {
    id: 's1',
    userId: 'u1',
    openId: 'o1',
    appId: null,
    platform: 'wechat',
    createdAt: 1_000,
    expiresAt: 5_000,
    touchedAt: 1_000,
    device: 'Test/1.0',
    university: { linkedAt: null, subject: null, email: null, name: null, isStudent: null },
  }

  it('the key check finds a session by its key hash, as Kysely reads it, and nothing for another hash', async () => {
    const store = createSessionStore(db, NOTHING_DUE, at(1_500))
    assert.deepEqual(await store.check('h1'), {
      record: S1,
      now: 1_500,
      live: true,
      touchedTo: null,
    })
    const { rows } = await sessionByKeyHash(db.kysely, 'h1')
    assert.deepEqual(rowToSession(rows[0]), S1)
    assert.equal(await store.check('h2'), null)
  })

  it('PostgreSQL: the key checks of one turn are one query, each answered with its own row', async (t) => {
    if (db.dialect !== 'postgres') return t.skip('PostgreSQL only')
    await insertPerson(db.kysely, { id: 'u2', openId: 'o2', createdAt: 1_000 })
    await db.kysely
      .insertInto('sessions')
      .values({
        id: 's2',
        user_id: 'u2',
        identity_id: 'u2-identity',
        key_hash: 'h2',
        created_at: 1_000,
        expires_at: 6_000,
        touched_at: 1_000,
      })
      .execute()
    try {
      const counted = countingQueries(db)
      const store = createSessionStore(counted.db, NOTHING_DUE, at(1_500))
      // Duplicates and unknown keys in one batch; rows come back in whatever order they please.
      const keyHashes = ['h2', 'unknown', 'h1', 'h2', 'h1']
      const found = await Promise.all(keyHashes.map((keyHash) => store.check(keyHash)))
      assert.deepEqual(
        found.map((checked) => checked?.record.openId ?? null),
        ['o2', null, 'o1', 'o2', 'o1'],
      )
      assert.deepEqual(found[2], { record: S1, now: 1_500, live: true, touchedTo: null })
      assert.deepEqual(counted.batches, [keyHashes])

      // A turn with more than a batch holds is split; a later turn is a batch of its own.
      counted.batches.length = 0
      const many = Array.from({ length: KEY_CHECK_BATCH_MAX + 1 }, (_, i) => `h${(i % 2) + 1}`)
      await Promise.all(many.map((keyHash) => store.check(keyHash)))
      assert.equal((await store.check('h1'))?.record.id, 's1')
      assert.deepEqual(
        counted.batches.map((batch) => batch.length),
        [KEY_CHECK_BATCH_MAX, 1, 1],
      )
    } finally {
      await db.kysely.deleteFrom('sessions').where('id', '=', 's2').execute()
      await db.kysely.deleteFrom('users').where('id', '=', 'u2').execute()
    }
  })

  it('PostgreSQL: the read of a batch keeps one generic plan instead of planning every execution', async (t) => {
    if (db.dialect !== 'postgres') return t.skip('PostgreSQL only')
    // One connection, so that the statement's counters below are those of the connection that ran it.
    const single = createDb(database.url, { poolSize: 1 }) as PostgresDb
    try {
      await withFillerSessions(db, 10_000, async () => {
        const store = createSessionStore(single, NOTHING_DUE, at(1_500))
        const turns = 12
        for (let turn = 0; turn < turns; turn += 1) {
          const found = await Promise.all(
            ['h1', 'unknown', 'h1'].map((keyHash) => store.check(keyHash)),
          )
          assert.deepEqual(
            found.map((checked) => checked?.record.id ?? null),
            ['s1', null, 's1'],
          )
        }
        const { sql: text } = sessionsByKeyHashes.bind(single.kysely, [])
        await assertOneGenericPlan(single, text, turns)
      })
    } finally {
      await single.kysely.destroy()
    }
  })

  it('PostgreSQL: the touches of a turn are one named statement that keeps one generic plan', async (t) => {
    if (db.dialect !== 'postgres') return t.skip('PostgreSQL only')
    const due: TouchRule = { ttlMs: 10_000, intervalMs: 100, maxAgeMs: null }
    const ids = ['sA', 'sB']
    await db.kysely
      .insertInto('sessions')
      .values(
        ids.map((id) => ({
          id,
          user_id: 'u1',
          identity_id: 'u1-identity',
          key_hash: `key-${id}`,
          created_at: 1_000,
          expires_at: 5_000,
          touched_at: 1_000,
        })),
      )
      .execute()
    // One connection, so that the statement's counters below are those of the connection that ran it.
    const single = createDb(database.url, { poolSize: 1 }) as PostgresDb
    try {
      await withFillerSessions(db, 10_000, async () => {
        let now = 1_000
        const store = createSessionStore(single, due, { now: () => new Date(now) })
        const turns = 12
        for (let turn = 0; turn < turns; turn += 1) {
          now += 200 // each check falls due a touch, on the same UTC day: no day to mark
          const checked = await Promise.all(ids.map((id) => store.check(`key-${id}`)))
          assert.deepEqual(
            checked.map((found) => found?.touchedTo),
            [now + 10_000, now + 10_000],
          )
        }
        const { sql: text } = touchesAndMarks.bind(single.kysely, [], [], [], [], [], [])
        await assertOneGenericPlan(single, text, turns)
        const written = await db.kysely
          .selectFrom('sessions')
          .select(['expires_at', 'touched_at'])
          .where('id', 'in', ids)
          .execute()
        assert.deepEqual(written, [
          { expires_at: now + 10_000, touched_at: now },
          { expires_at: now + 10_000, touched_at: now },
        ])
      })
    } finally {
      await single.kysely.destroy()
      await db.kysely.deleteFrom('sessions').where('id', 'in', ids).execute()
    }
  })

  it('PostgreSQL: a failed batch fails each of its key checks, and the next turn reads again', async (t) => {
    if (db.dialect !== 'postgres') return t.skip('PostgreSQL only')
    const counted = countingQueries(db, { failFirst: true })
    const store = createSessionStore(counted.db, NOTHING_DUE, at(1_500))
    const results = await Promise.allSettled(['h1', 'h2'].map((keyHash) => store.check(keyHash)))
    assert.deepEqual(
      results.map((result) => result.status),
      ['rejected', 'rejected'],
    )
    assert.equal((await store.check('h1'))?.record.id, 's1')
    assert.equal(counted.batches.length, 2)
  })

  it('the key check writes its due touch; a database that takes no writes answers it without', async () => {
    const due: TouchRule = { ttlMs: 10_000, intervalMs: 100, maxAgeMs: null }
    const readOnly =
      db.dialect === 'postgres'
        ? createDb(withOptions(database.url, '-c default_transaction_read_only=on'), {
            poolSize: 1,
          })
        : null
    try {
      if (readOnly !== null) {
        const refused = await createSessionStore(readOnly, due, at(1_500)).check('h1')
        assert.equal(refused?.record.id, 's1')
        assert.equal(refused?.touchedTo, null)
        assert.equal((readOnly.writes.fault?.error as { code?: string }).code, '25006')
      }
      const written = await createSessionStore(db, due, at(1_500)).check('h1')
      assert.equal(written?.touchedTo, 11_500)
      const { rows } = await sessionByKeyHash(db.kysely, 'h1')
      assert.deepEqual([rows[0]?.expires_at, rows[0]?.touched_at], [11_500, 1_500])
      // 1_500 is on the same UTC day as the last touch (1_000): no mark.
      const marks = await db.kysely.selectFrom('user_active_days').selectAll().execute()
      assert.deepEqual(marks, [])
    } finally {
      await readOnly?.kysely.destroy()
      await db.kysely
        .updateTable('sessions')
        .set({ expires_at: 5_000, touched_at: 1_000 })
        .where('id', '=', 's1')
        .execute()
    }
  })

  it('two key checks of one session due a touch, read in one turn, write one touch, and both report it', async () => {
    const due: TouchRule = { ttlMs: 10_000, intervalMs: 100, maxAgeMs: null }
    let now = 1_500
    // Of two racing touches one alone writes (`touchSession`, rows.ts), as between instances.
    const store = createSessionStore(db, due, { now: () => new Date((now += 1)) })
    try {
      const [a, b] = await Promise.all([store.check('h1'), store.check('h1')])
      assert.equal(a?.touchedTo, 11_501)
      assert.equal(b?.touchedTo, 11_501)
      const { rows } = await sessionByKeyHash(db.kysely, 'h1')
      assert.deepEqual([rows[0]?.expires_at, rows[0]?.touched_at], [11_501, 1_501])
    } finally {
      await db.kysely
        .updateTable('sessions')
        .set({ expires_at: 5_000, touched_at: 1_000 })
        .where('id', '=', 's1')
        .execute()
    }
  })

  it('binds each call its own arguments, also inside a transaction', async () => {
    await db.kysely.transaction().execute(async (trx) => {
      await touchSession(trx, 's1', 9_000, 2_000, 1_000)
      assert.equal((await sessionByKeyHash(trx, 'h1')).rows[0]?.expires_at, 9_000)
    })
    // Only a session still last written when it was read: a touch that read 1_000 writes nothing.
    await touchSession(db.kysely, 's1', 8_000, 3_000, 1_000)
    const { rows } = await sessionByKeyHash(db.kysely, 'h1')
    assert.equal(rows[0]?.expires_at, 9_000)
    assert.equal(rows[0]?.touched_at, 2_000)
  })

  it('compiles once per database, however many transactions run it', async () => {
    let builds = 0
    const userById = precompiled((kysely, id: string) => {
      builds += 1
      return kysely.selectFrom('users').select('created_at').where('id', '=', id)
    }, 1)
    for (let round = 0; round < 3; round += 1) {
      await inTransaction(db.kysely, async (trx) => {
        assert.equal((await userById(trx, 'u1')).rows[0]?.created_at, 1_000)
      })
    }
    assert.equal((await userById(db.kysely, 'u1')).rows[0]?.created_at, 1_000)
    assert.equal(builds, 1)
  })

  it('refuses, on first use, a build that does not bind an argument as a value', () => {
    const broken = precompiled(
      (kysely, _unused: string) => kysely.selectFrom('users').select('id').where('id', '=', 'u1'),
      1,
    )
    assert.throws(() => broken(db.kysely, 'u1'), /does not bind argument 0/)
  })

  it('refuses, on first use, a build that binds its LIMIT: SQLite would plan it on every run', () => {
    const bound = precompiled(
      (kysely, limit: number) => kysely.selectFrom('users').select('id').limit(limit),
      1,
    )
    assert.throws(() => bound(db.kysely, 5), /binds its LIMIT or OFFSET/)
    const paged = precompiled(
      (kysely, id: string) =>
        kysely.selectFrom('users').select('id').where('id', '>', id).limit(5).offset(sql.lit(5)),
      1,
    )
    assert.throws(() => paged(db.kysely, 'u'), /binds its LIMIT or OFFSET/)
    const written = precompiled(
      (kysely, id: string) =>
        kysely.selectFrom('users').select('id').where('id', '=', id).limit(sql.lit(5)),
      1,
    )
    assert.match(written.bind(db.kysely, 'u1').sql, /limit 5$/)
  })

  it('prepares PostgreSQL statements by name, per connection, except those with *', async (t) => {
    if (TEST_DIALECT !== 'postgres') return t.skip('PostgreSQL only')
    await db.kysely.transaction().execute(async (trx) => {
      await sessionByKeyHash(trx, 'h1')
      await trx.selectFrom('users').selectAll().where('id', '=', 'u1').execute()
      const { rows } = await sql<{
        statement: string
      }>`select statement from pg_prepared_statements`.execute(trx)
      const statements = rows.map((row) => row.statement)
      assert.ok(statements.some((text) => text.includes('"sessions"."key_hash" = (SELECT $1)')))
      assert.ok(!statements.some((text) => text.includes('*')))
    })
  })
})

describe('statement cache bounds', () => {
  it('SQLite: the same text gives the same statement; the least recently used goes first', () => {
    const sqlite = new SQLite(':memory:')
    const cached = cachingSqlite(sqlite, 2)
    const a = cached.prepare('select 1')
    assert.equal(cached.prepare('select 1'), a)
    const b = cached.prepare('select 2')
    cached.prepare('select 1')
    cached.prepare('select 3') // evicts "select 2", the least recently used
    assert.equal(cached.prepare('select 1'), a)
    assert.notEqual(cached.prepare('select 2'), b)
    cached.close()
  })

  it('PostgreSQL: at most the bound of distinct statements is named', async (t) => {
    if (TEST_DIALECT !== 'postgres') return t.skip('PostgreSQL only')
    const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 1 })
    const preparing = preparingPool(pool, statementNamer(2))
    const client = await preparing.connect()
    try {
      for (const n of [1, 2, 3, 4]) await client.query(`select $1::int + ${n} as n`, [n])
      const { rows } = await client.query<{ count: string }>(
        'select count(*) from pg_prepared_statements',
        [],
      )
      assert.equal(Number(rows[0].count), 2)
    } finally {
      client.release()
      await preparing.end()
    }
  })
})

describe('request log', () => {
  it('writes one line per request, on completion, with method, path, status and time', async () => {
    const service = await startService()
    try {
      await call(`${service.url}/session?probe=1`, { headers: { authorization: 'not-a-key' } })
      const lines = logLines(service).filter((line) => line.req?.path === '/session')
      assert.equal(lines.length, 1)
      assert.equal(lines[0].msg, 'request completed')
      assert.deepEqual(Object.keys(lines[0].req as object).sort(), ['ip', 'method', 'path'])
      assert.equal(lines[0].res.statusCode, 401)
      assert.equal(typeof lines[0].responseTime, 'number')
      assert.ok(!service.logs().includes('not-a-key') && !service.logs().includes('probe'))
    } finally {
      await service.close()
    }
  })
})

describe('the key check while a write transaction is open', () => {
  let stack: Stack
  before(async () => {
    stack = await startStack()
  })
  after(() => stack.close())

  it('answers concurrent key checks each with its own session, unknown and ended keys too', async () => {
    // Registered at once: on SQLite they share commits, on PostgreSQL their key checks share queries.
    const users = await Promise.all(
      Array.from({ length: 8 }, (_, i) => registerMessenger(stack, `concurrent-${i}`)),
    )
    const ended = users[3]
    await logout(stack, ended.sessionKey)
    const keys = [...users.map((user) => user.sessionKey), 'x'.repeat(43)]
    const answers = await Promise.all(
      keys.map((key) => call(`${stack.service.url}/session`, { headers: { authorization: key } })),
    )
    assert.deepEqual(
      answers.map((answer): unknown =>
        answer.status === 200 ? answer.body.openId : answer.status,
      ),
      [...users.map((user) => (user === ended ? 401 : user.openId)), 401],
    )
  })

  it('answers without waiting for the transaction, and sees its writes once committed', async () => {
    const { sessionKey, openId } = await registerMessenger(stack)
    const check = () =>
      call(`${stack.service.url}/session`, { headers: { authorization: sessionKey } })
    // A transaction holds the write connection (on SQLite, Kysely's only one) while the key is
    // checked; the check must not queue behind it. The race only ends a deadlock as a failure.
    const answered = await stack.service.db.kysely.transaction().execute(async (trx) => {
      await trx
        .updateTable('users')
        .set({ updated_at: 1 })
        .where('id', '=', await userIdOf(trx, openId))
        .execute()
      await trx.deleteFrom('sessions').where('key_hash', '=', hashSecret(sessionKey)).execute()
      const response = await Promise.race([
        check(),
        new Promise<null>((resolve) => setTimeout(() => resolve(null), 20_000).unref()),
      ])
      return response?.status ?? 'waited for the transaction'
    })
    // Uncommitted, the logout-like delete was not seen; committed, it is.
    assert.equal(answered, 200)
    assert.equal((await check()).status, 401)
  })
})
