import assert from 'node:assert/strict'
import { after, afterEach, describe, it } from 'node:test'
import SQLite from 'better-sqlite3'
import pg from 'pg'
import { TEST_DIALECT } from '../helpers/database.js'
import { errorLines } from '../helpers/logs.js'
import { call, WITHOUT_ADDRESS_LIMITS } from '../helpers/service.js'
import {
  mountBreakableDisk,
  mountSmallDisk,
  type BreakableDisk,
  type SmallDisk,
} from '../helpers/small-disk.js'
import { WRITE_FAULT_HOLD_MS } from '../../src/db/write-health.js'
import {
  mintLoginCode,
  registerMessenger,
  sessionOf,
  startStack,
  type Stack,
} from '../helpers/stack.js'
import { SANDBOX_APP } from '../../src/sandbox/routes.js'

// docs/operations.md, "Storage faults": a database that cannot take a write is answered like a lost database.

interface Attempt {
  status: number
  text: string
  retryAfter: string | null
  openId: string
  sessionKey?: string
}

async function tryRegister(stack: Stack): Promise<Attempt> {
  const login = await mintLoginCode(stack)
  const response = await call(`${stack.service.url}/register/messenger`, {
    method: 'POST',
    json: { appId: SANDBOX_APP.appId, appSecret: SANDBOX_APP.appSecret, code: login.code },
  })
  return {
    status: response.status,
    text: response.text,
    retryAfter: response.headers.get('retry-after'),
    openId: login.openId,
    ...(response.status === 200 ? { sessionKey: response.body.sessionKey as string } : {}),
  }
}

/** `count` registrations, `concurrency` at a time. */
async function registrationLoad(stack: Stack, count: number, concurrency = 8): Promise<Attempt[]> {
  const attempts: Attempt[] = []
  let next = 0
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        next += 1
        attempts.push(await tryRegister(stack))
      }
    }),
  )
  return attempts
}

async function readiness(stack: Stack) {
  return call(`${stack.service.url}/readyz`)
}

/** Polls /readyz until it answers `status`, for up to `ms`. */
async function readinessBecomes(stack: Stack, status: number, ms = 15_000) {
  const deadline = Date.now() + ms
  let answer = await readiness(stack)
  while (answer.status !== status && Date.now() < deadline) {
    await new Promise((done) => setTimeout(done, 200))
    answer = await readiness(stack)
  }
  return answer
}

function assertOnlyOkOrUnavailable(attempts: Attempt[]): void {
  for (const attempt of attempts) {
    assert.ok([200, 503].includes(attempt.status), `${attempt.status} ${attempt.text}`)
    if (attempt.status === 503) {
      assert.equal(attempt.text, '{"error":"@service-unavailable/database-unavailable"}')
      assert.match(attempt.retryAfter ?? '', /^[1-9]\d*$/)
    }
  }
}

/** The error lines name the driver's error, never the rollback that followed it, never a 500. */
function assertErrorLinesName(stack: Stack, cause: RegExp): void {
  const lines = errorLines(stack.service)
  assert.ok(lines.length > 0, 'the fault is logged')
  for (const line of lines) {
    const text = JSON.stringify(line)
    assert.doesNotMatch(text, /cannot rollback/)
    assert.doesNotMatch(text, /unexpected/)
  }
  assert.ok(
    lines.some((line) => cause.test(JSON.stringify(line.err))),
    `an error line names ${cause}`,
  )
}

if (TEST_DIALECT === 'sqlite') {
  describe('SQLite on a file system that fills up or turns read-only (issue 28)', () => {
    let disk: SmallDisk | undefined
    let ext4: BreakableDisk | undefined
    let stack: Stack | undefined
    afterEach(async () => {
      await stack?.close().catch(() => undefined)
      stack = undefined
      disk?.remove()
      disk = undefined
      ext4?.remove()
      ext4 = undefined
    })

    async function startOnSmallDisk(): Promise<{ stack: Stack; disk: SmallDisk; path: string }> {
      disk = mountSmallDisk(3)
      const path = `${disk.dir}/campusgate.db`
      stack = await startStack(
        { DATABASE_URL: `sqlite:${path}`, LOG_LEVEL: 'warn' },
        WITHOUT_ADDRESS_LIMITS,
      )
      return { stack, disk, path }
    }

    function countRows(path: string): { users: number; sessions: number; registrations: number } {
      const sqlite = new SQLite(path, { readonly: true })
      try {
        const one = (sql: string) => (sqlite.prepare(sql).get() as { n: number }).n
        return {
          users: one('SELECT count(*) AS n FROM users'),
          sessions: one('SELECT count(*) AS n FROM sessions'),
          registrations: one("SELECT count(*) AS n FROM audit_events WHERE type = 'registration'"),
        }
      } finally {
        sqlite.close()
      }
    }

    it('a full disk answers 503 with Retry-After, not ready, serves reads, and recovers when space returns', async () => {
      const { stack, disk, path } = await startOnSmallDisk()
      const earlier = await Promise.all([1, 2, 3].map(() => registerMessenger(stack)))
      assert.equal((await readiness(stack)).status, 200)

      disk.fill()
      const attempts = await registrationLoad(stack, 400)
      assertOnlyOkOrUnavailable(attempts)
      const refused = attempts.filter((a) => a.status === 503).length
      assert.ok(refused > 0, 'the full disk refused registrations')

      const notReady = await readiness(stack)
      assert.equal(notReady.status, 503, notReady.text)
      assert.deepEqual(notReady.body, { error: '@service-unavailable/not-ready' })
      // A key check needs no write: it is still served.
      for (const user of earlier)
        assert.equal((await sessionOf(stack, user.sessionKey)).status, 200)
      // Nor one whose touch falls due: the write fails, the session keeps its expiry.
      stack.service.clock.advance(2 * 60_000)
      for (const user of earlier)
        assert.equal((await sessionOf(stack, user.sessionKey)).status, 200)
      assertErrorLinesName(stack, /SQLITE_FULL/)

      disk.free()
      const ready = await readinessBecomes(stack, 200)
      assert.equal(ready.status, 200, ready.text)
      const later = await registrationLoad(stack, 20)
      assert.deepEqual(
        later.map((a) => a.status),
        later.map(() => 200),
      )
      const accepted = attempts.filter((a) => a.sessionKey !== undefined)
      for (const user of [...earlier, ...accepted, ...later]) {
        assert.equal((await sessionOf(stack, user.sessionKey!)).status, 200)
      }
      // Nothing half-written: a refused registration left no user, session or audit event.
      const registered = earlier.length + accepted.length + later.length
      assert.deepEqual(countRows(path), {
        users: registered,
        sessions: registered,
        registrations: registered,
      })
      const check = new SQLite(path, { readonly: true })
      assert.equal(check.pragma('integrity_check', { simple: true }), 'ok')
      check.close()
    })

    it('a file system turned read-only answers 503 and not ready, names the I/O error, and still serves reads', async () => {
      const broken = mountBreakableDisk(16)
      ext4 = broken
      const path = `${broken.dir}/campusgate.db`
      stack = await startStack(
        { DATABASE_URL: `sqlite:${path}`, LOG_LEVEL: 'warn' },
        WITHOUT_ADDRESS_LIMITS,
      )
      const service = stack
      const earlier = await Promise.all([1, 2, 3].map(() => registerMessenger(service)))
      broken.turnReadOnly()
      const attempts = await registrationLoad(service, 40)
      assertOnlyOkOrUnavailable(attempts)
      assert.equal(attempts.filter((a) => a.status === 503).length, attempts.length)
      const notReady = await readiness(service)
      assert.equal(notReady.status, 503, notReady.text)
      // Still not ready once the hold is over: the probe write fails too.
      await new Promise((done) => setTimeout(done, WRITE_FAULT_HOLD_MS + 200))
      assert.equal((await readiness(service)).status, 503)
      for (const user of earlier) {
        assert.equal((await sessionOf(service, user.sessionKey)).status, 200)
      }
      assertErrorLinesName(service, /SQLITE_(IOERR|READONLY)/)
    })
  })
} else {
  describe('PostgreSQL with its tablespace out of space (issue 28)', () => {
    let disk: SmallDisk | undefined
    let stack: Stack | undefined
    let admin: pg.Client | undefined
    const tablespace = `cg_small_${process.pid}`
    const schema = `cg_test_${process.pid}_small`
    after(async () => {
      await stack?.close().catch(() => undefined)
      if (admin !== undefined) {
        // A tablespace is dropped only once nothing is in it.
        await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined)
        await admin.query(`DROP TABLE IF EXISTS ${tablespace}_filler`).catch(() => undefined)
        await admin.query(`DROP TABLESPACE IF EXISTS ${tablespace}`).catch(() => undefined)
        await admin.end()
      }
      disk?.remove()
    })

    it('disk_full (53100) answers 503 with Retry-After, not ready, serves reads, and recovers when space returns', async () => {
      disk = mountSmallDisk(32, 'postgres:postgres')
      admin = new pg.Client({ connectionString: process.env.DATABASE_URL })
      await admin.connect()
      await admin.query(`CREATE TABLESPACE ${tablespace} LOCATION '${disk.dir}'`)
      // The service's tables (and their indexes) are created in the small tablespace.
      const server = new URL(process.env.DATABASE_URL!)
      await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      await admin.query(`CREATE SCHEMA ${schema}`)
      server.searchParams.set(
        'options',
        `-c search_path=${schema} -c default_tablespace=${tablespace}`,
      )
      stack = await startStack(
        { DATABASE_URL: server.toString(), LOG_LEVEL: 'warn' },
        WITHOUT_ADDRESS_LIMITS,
      )
      const earlier = await Promise.all([1, 2, 3].map(() => registerMessenger(stack!)))

      // Fill the tablespace until PostgreSQL says so.
      await admin.query(`CREATE TABLE ${tablespace}_filler (body text) TABLESPACE ${tablespace}`)
      await admin.query(`ALTER TABLE ${tablespace}_filler ALTER COLUMN body SET STORAGE PLAIN`)
      let full = false
      for (let i = 0; i < 10_000 && !full; i += 1) {
        try {
          await admin.query(
            `INSERT INTO ${tablespace}_filler SELECT repeat('x', 7000) FROM generate_series(1, 500)`,
          )
        } catch (error) {
          assert.equal((error as { code?: string }).code, '53100', String(error))
          full = true
        }
      }
      assert.ok(full, 'the tablespace filled up')

      const attempts = await registrationLoad(stack, 200)
      assertOnlyOkOrUnavailable(attempts)
      assert.ok(attempts.filter((a) => a.status === 503).length > 0, 'registrations were refused')
      const notReady = await readiness(stack)
      assert.equal(notReady.status, 503, notReady.text)
      for (const user of earlier)
        assert.equal((await sessionOf(stack, user.sessionKey)).status, 200)
      // Nor one whose touch falls due, which rides in the key check's own statement.
      stack.service.clock.advance(2 * 60_000)
      for (const user of earlier)
        assert.equal((await sessionOf(stack, user.sessionKey)).status, 200)
      assertErrorLinesName(stack, /53100|No space left/)

      await admin.query(`DROP TABLE ${tablespace}_filler`)
      const ready = await readinessBecomes(stack, 200)
      assert.equal(ready.status, 200, ready.text)
      const later = await registrationLoad(stack, 10)
      assert.deepEqual(
        later.map((a) => a.status),
        later.map(() => 200),
      )
      const accepted = attempts.filter((a) => a.sessionKey !== undefined)
      const registered = earlier.length + accepted.length + later.length
      const counts = await admin.query<{ users: number; sessions: number }>(
        `SELECT (SELECT count(*)::int FROM ${schema}.users) AS users,
                (SELECT count(*)::int FROM ${schema}.sessions) AS sessions`,
      )
      assert.deepEqual(counts.rows[0], { users: registered, sessions: registered })
      await stack.close()
      stack = undefined
      await admin.query(`DROP SCHEMA ${schema} CASCADE`)
    })
  })
}
