import assert from 'node:assert/strict'
import { personRowOrThrow } from '../helpers/people.js'
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { createConnection, type Connection } from 'mysql2/promise'
import { createCipher } from '../../src/lib/encryption.js'
import { hashSecret } from '../../src/lib/secrets.js'
import { addForumRoute } from '../helpers/app-routes.js'
import { buildDist } from '../helpers/process.js'
import { call } from '../helpers/service.js'
import {
  decideAtProvider,
  followCallback,
  openLink,
  registerMessenger,
  requestConfirmationLink,
  sessionOf,
  startStack,
  type Stack,
} from '../helpers/stack.js'

// The original server's table, as it created it (docs/migrating-from-original.md).
const ORIGINAL_TABLE = `CREATE TABLE UserSessions (
  UclcssaSessionKey CHAR(64) NOT NULL DEFAULT '',
  CreationDatetime DATETIME NOT NULL DEFAULT NOW(),
  LastUsed DATETIME NOT NULL DEFAULT NOW(),
  WechatOpenId CHAR(64) NOT NULL DEFAULT '',
  WechatSessionKey CHAR(64) NOT NULL DEFAULT '',
  UclapiToken CHAR(64) NOT NULL DEFAULT '',
  PRIMARY KEY (WechatOpenId)
)`

const MARIADB = { host: '127.0.0.1', port: 3306, user: 'root' }
const BIN = resolve('bin/campusgate.js')
const DAY = 24 * 3600_000
const ENCRYPTION_KEY = randomBytes(32).toString('base64')

/** A session key as the original issued it: 64 lower-case hex characters. */
function originalKey(): string {
  return randomBytes(32).toString('hex')
}

/** `LastUsed` as the original wrote it, here in UTC (the import runs with --timezone Z). */
function datetime(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace('T', ' ')
}

interface OriginalRow {
  openId: string
  key: string
  lastUsed: number
  wechatSessionKey?: string
  uclapiToken?: string
}

async function insertRows(connection: Connection, rows: readonly OriginalRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 1000) {
    const chunk = rows.slice(i, i + 1000)
    await connection.query(
      'INSERT INTO UserSessions (WechatOpenId, UclcssaSessionKey, LastUsed, WechatSessionKey, UclapiToken) VALUES ?',
      [
        chunk.map((row) => [
          // The original padded openIds with spaces on the left to 64 characters.
          row.openId.padStart(64, ' '),
          row.key,
          datetime(row.lastUsed),
          row.wechatSessionKey ?? `wx-${row.openId}`,
          row.uclapiToken ?? '',
        ]),
      ],
    )
  }
}

/** A database of the original's on the machine's MariaDB; null when none answers (outside CI). */
async function originalDatabase(): Promise<{
  url: string
  connection: Connection
  drop(): Promise<void>
} | null> {
  let admin: Connection
  try {
    admin = await createConnection({ ...MARIADB, connectTimeout: 3000 })
  } catch (error) {
    // CI starts MariaDB (.ci/run): there a missing server fails the run.
    if (process.env.CI === 'true') throw error
    return null
  }
  const name = `cg_original_${process.pid}_${randomBytes(4).toString('hex')}`
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const connection = await createConnection({ ...MARIADB, database: name })
  await connection.query(ORIGINAL_TABLE)
  return {
    url: `mysql://root@127.0.0.1:3306/${name}`,
    connection,
    async drop() {
      await connection.query(`DROP DATABASE ${name}`)
      await connection.end()
    },
  }
}

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

describe('campusgate import-original', async () => {
  const probe = await originalDatabase()
  if (probe === null) {
    it('needs MariaDB on 127.0.0.1:3306 (.ci/run starts it)', { skip: 'no MariaDB here' })
    return
  }
  const original = probe
  let stack: Stack
  let env: Record<string, string>
  let extraEnv: Record<string, string> = {}

  function campusgate(...args: string[]): Run {
    const run = spawnSync(process.execPath, [BIN, ...args], {
      env: { PATH: process.env.PATH, ...env, ...extraEnv },
      encoding: 'utf8',
      timeout: 120_000,
    })
    return { code: run.status, stdout: run.stdout, stderr: run.stderr }
  }

  function importOriginal(...args: string[]): { run: Run; report: Record<string, unknown> } {
    const run = campusgate(
      'import-original',
      '--from',
      original.url,
      '--timezone',
      'Z',
      '--json',
      ...args,
    )
    assert.equal(run.code, 0, run.stderr)
    return { run, report: JSON.parse(run.stdout) as Record<string, unknown> }
  }

  /** Every user and session row, for "nothing changed". */
  async function snapshot(): Promise<unknown> {
    const db = stack.service.db.kysely
    return {
      users: await db.selectFrom('users').selectAll().orderBy('id').execute(),
      identities: await db.selectFrom('identities').selectAll().orderBy('id').execute(),
      sessions: await db.selectFrom('sessions').selectAll().orderBy('key_hash').execute(),
    }
  }

  const now = Date.now()
  const live = { openId: 'oLive', key: originalKey(), lastUsed: now - 2 * DAY }
  const upper = { openId: 'oUpper', key: originalKey().toUpperCase(), lastUsed: now - DAY }
  const withToken = {
    openId: 'oToken',
    key: originalKey(),
    lastUsed: now - DAY,
    uclapiToken: 'uclapi-0123456789abcdef',
  }
  const leaving = { openId: 'oLeaving', key: originalKey(), lastUsed: now - DAY }
  const student = { openId: 'oStudent', key: originalKey(), lastUsed: now - DAY }
  const rotating = { openId: 'oRotating', key: originalKey(), lastUsed: now - 3 * DAY }
  const expired = { openId: 'oExpired', key: originalKey(), lastUsed: now - 31 * DAY }
  const loggedOut = {
    openId: 'oLoggedOut',
    key: originalKey(),
    lastUsed: now,
    wechatSessionKey: '',
  }
  const sharedKey = originalKey()
  const firstOfKey = { openId: 'oSharedA', key: sharedKey, lastUsed: now - DAY }
  const secondOfKey = { openId: 'oSharedB', key: sharedKey, lastUsed: now - DAY }
  const invalid = [
    { openId: 'oShortKey', key: 'abc123', lastUsed: now },
    { openId: 'oNotHex', key: 'g'.repeat(64), lastUsed: now },
    { openId: '', key: originalKey(), lastUsed: now },
  ]
  // Registered in campusgate before the import; the original's row for it is older.
  let present: { openId: string; sessionKey: string }
  let presentRow: OriginalRow

  before(async () => {
    buildDist()
    stack = await startStack({ DATA_ENCRYPTION_KEY: ENCRYPTION_KEY }, { extend: addForumRoute })
    // The command runs on the real clock: the service's is brought to it.
    stack.service.clock.advance(Date.now() - stack.service.clock.now().getTime())
    env = {
      DATABASE_URL: stack.service.config.database.url,
      DATA_ENCRYPTION_KEY: ENCRYPTION_KEY,
      LOG_LEVEL: 'warn',
    }
    present = await registerMessenger(stack)
    presentRow = { openId: present.openId, key: originalKey(), lastUsed: now - DAY }
    await insertRows(original.connection, [
      live,
      upper,
      withToken,
      leaving,
      student,
      rotating,
      expired,
      loggedOut,
      firstOfKey,
      secondOfKey,
      presentRow,
      ...invalid,
    ])
  })
  after(async () => {
    await stack?.close()
    await original.drop()
  })

  it('--dry-run counts and changes nothing', async () => {
    const before = await snapshot()
    const { report } = importOriginal('--dry-run')
    assert.deepEqual(await snapshot(), before)
    assert.equal(report.dryRun, true)
    assert.equal(report.rows, 14)
    assert.equal(report.imported, 8, 'two rows share a key: the dry run cannot know')
    assert.equal(report.skippedPresent, 1)
    assert.equal(report.skippedExpired, 1)
    assert.equal(report.skippedLoggedOut, 1)
    assert.equal(report.invalid, 3)
  })

  it('imports each live user with its key, so every route takes the key the mini-program holds', async () => {
    const { run, report } = importOriginal()
    assert.deepEqual(
      {
        rows: report.rows,
        imported: report.imported,
        updated: report.updated,
        skippedExpired: report.skippedExpired,
        skippedLoggedOut: report.skippedLoggedOut,
        skippedPresent: report.skippedPresent,
        invalid: report.invalid,
        tokensNotCarried: report.tokensNotCarried,
      },
      {
        rows: 14,
        imported: 7,
        updated: 0,
        skippedExpired: 1,
        skippedLoggedOut: 1,
        skippedPresent: 1,
        invalid: 4,
        tokensNotCarried: 1,
      },
    )
    // Bad rows are named by openId or position, never by a key.
    const named = new Map(
      (report.invalidRows as { name: string; reason: string }[]).map((row) => [
        row.name,
        row.reason,
      ]),
    )
    assert.deepEqual([...named.keys()].sort(), [
      'openId "oNotHex"',
      'openId "oSharedB"',
      'openId "oShortKey"',
      'row 1',
    ])
    assert.equal(named.get('row 1'), 'empty openId')
    assert.equal(named.get('openId "oShortKey"'), 'session key is not 64 hex characters')
    assert.match(named.get('openId "oSharedB"') ?? '', /^not stored: /)
    for (const row of [live, upper, withToken, rotating, firstOfKey, ...invalid]) {
      assert.ok(!run.stdout.includes(row.key) && !run.stderr.includes(row.key))
    }

    // GET /session with the original's key, raw and as Bearer; padding gone from the openId.
    for (const row of [live, upper, rotating, firstOfKey]) {
      const session = await sessionOf(stack, row.key)
      assert.equal(session.status, 200, `${row.openId}: ${session.text}`)
      assert.equal(session.body.openId, row.openId)
      assert.equal(session.body.tier, 'messenger-registered')
    }
    const bearer = await sessionOf(stack, `Bearer ${live.key}`)
    assert.equal(bearer.status, 200)

    // A UclapiToken gives no tier 2.
    const token = await sessionOf(stack, withToken.key)
    assert.equal(token.body.tier, 'messenger-registered')
    const forum = await call(`${stack.service.url}/forum`, {
      headers: { authorization: withToken.key },
    })
    assert.equal(forum.status, 403)
    assert.deepEqual(forum.body, { error: '@forbidden/insufficient-registration-tier' })

    // Expired, logged-out, invalid and refused rows brought no key; the present user keeps its own.
    for (const row of [expired, loggedOut, presentRow, ...invalid.slice(0, 2)]) {
      const session = await sessionOf(stack, row.key)
      assert.equal(session.status, 401, row.openId)
    }
    for (const openId of ['oExpired', 'oLoggedOut', 'oSharedB', 'oShortKey', 'oNotHex', '']) {
      const found = await stack.service.db.kysely
        .selectFrom('identities')
        .select('user_id as id')
        .where('subject', '=', openId)
        .executeTakeFirst()
      assert.equal(found, undefined, `no user ${JSON.stringify(openId)}, not even half of one`)
    }
    assert.equal((await sessionOf(stack, present.sessionKey)).status, 200)
    // Of two rows with one key, the first stored keeps it.
    assert.equal((await sessionOf(stack, sharedKey)).body.openId, firstOfKey.openId)
  })

  it('stores the messenger session key encrypted and the session key hashed, as for every user', async () => {
    const db = stack.service.db.kysely
    const user = await personRowOrThrow(db, live.openId)
    assert.notEqual(user.messenger_session_key, `wx-${live.openId}`)
    const cipher = createCipher([Buffer.from(ENCRYPTION_KEY, 'base64')])
    assert.equal(cipher.decrypt(user.messenger_session_key!), `wx-${live.openId}`)
    assert.equal(user.university_token, null)
    const session = await db
      .selectFrom('sessions')
      .selectAll()
      .where('user_id', '=', user.id)
      .executeTakeFirstOrThrow()
    assert.equal(session.key_hash, hashSecret(live.key))
    const all = JSON.stringify(await snapshot())
    for (const row of [live, upper, withToken, rotating, firstOfKey]) {
      assert.ok(!all.includes(row.key), 'no original key in clear')
    }
    const events = await db
      .selectFrom('audit_events')
      .select(['open_id', 'actor'])
      .where('type', '=', 'import')
      .execute()
    assert.equal(events.length, 7)
    assert.ok(events.every((event) => event.actor.startsWith('cli:')))
  })

  it('an imported key logs out, erases its user, and links a university account, like any other', async () => {
    const logout = await call(`${stack.service.url}/logout`, {
      method: 'POST',
      headers: { authorization: leaving.key },
    })
    assert.equal(logout.status, 200, logout.text)
    assert.equal((await sessionOf(stack, leaving.key)).status, 401)

    const erase = await call(`${stack.service.url}/user`, {
      method: 'DELETE',
      headers: { authorization: upper.key },
    })
    assert.equal(erase.status, 200, erase.text)
    assert.equal((await sessionOf(stack, upper.key)).status, 401)

    const link = await requestConfirmationLink(stack, student.key, 'student@example.edu')
    const opened = await openLink(link)
    assert.equal(opened.status, 301)
    const callback = await decideAtProvider(stack, student.openId, 'allow')
    const done = await followCallback(callback, opened.cookie)
    assert.equal(done.status, 200, done.text)
    const forum = await call(`${stack.service.url}/forum`, {
      headers: { authorization: student.key },
    })
    assert.equal(forum.status, 200, forum.text)
  })

  it('running it again changes nothing: a logout or an erasure in campusgate stays', async () => {
    const before = await snapshot()
    const { report } = importOriginal()
    assert.equal(report.imported, 0)
    assert.equal(report.updated, 0)
    assert.equal(report.skippedPresent, 8)
    assert.deepEqual(await snapshot(), before)
    assert.equal((await sessionOf(stack, leaving.key)).status, 401)
    assert.equal((await sessionOf(stack, upper.key)).status, 401)
  })

  it('a key the original issued, or used, after the import replaces or extends the imported one', async () => {
    // LastUsed has whole seconds: the rotation happens in a later second than the import.
    await new Promise((resolve) => setTimeout(resolve, 1100 - (Date.now() % 1000)))
    const renewed = originalKey()
    await original.connection.query(
      'UPDATE UserSessions SET UclcssaSessionKey = ?, LastUsed = ? WHERE WechatOpenId = ?',
      [renewed, datetime(Date.now()), rotating.openId.padStart(64, ' ')],
    )
    // A later use of the same key (LastUsed moved on) extends the imported session.
    const usedAgain = Math.floor(Date.now() / 1000) * 1000
    await original.connection.query('UPDATE UserSessions SET LastUsed = ? WHERE WechatOpenId = ?', [
      datetime(usedAgain),
      live.openId.padStart(64, ' '),
    ])
    const { report } = importOriginal()
    assert.equal(report.updated, 2)
    assert.equal(report.imported, 0)
    const extended = await stack.service.db.kysely
      .selectFrom('sessions')
      .select('expires_at')
      .where('key_hash', '=', hashSecret(live.key))
      .executeTakeFirstOrThrow()
    assert.equal(Number(extended.expires_at), usedAgain + 30 * DAY)
    assert.equal((await sessionOf(stack, rotating.key)).status, 401)
    const session = await sessionOf(stack, renewed)
    assert.equal(session.status, 200)
    assert.equal(session.body.openId, rotating.openId)
    // The user registered in campusgate keeps its newer session whatever the original says.
    assert.equal((await sessionOf(stack, present.sessionKey)).status, 200)
  })

  it('says what is wrong with the command line or the source, without the password', () => {
    const missing = campusgate('import-original')
    assert.equal(missing.code, 2)
    assert.match(missing.stderr, /--from is required/)
    assert.equal(campusgate('import-original', '--from', 'http://example/x').code, 2)
    assert.equal(
      campusgate('import-original', '--from', original.url, '--timezone', 'Mars').code,
      2,
    )
    const unreachable = campusgate(
      'import-original',
      '--from',
      'mysql://root:s3cret-Pa55@127.0.0.1:1/nothing',
    )
    assert.equal(unreachable.code, 1)
    assert.ok(!unreachable.stderr.includes('s3cret-Pa55'), unreachable.stderr)
    const help = campusgate('import-original', '--help')
    assert.equal(help.code, 0)
    assert.match(help.stdout, /^campusgate import-original — /)
  })

  it('shows progress on a long import', async () => {
    const many = Array.from({ length: 6000 }, (_, i) => ({
      openId: `oMany${String(i).padStart(5, '0')}`,
      key: originalKey(),
      lastUsed: now - DAY,
    }))
    await insertRows(original.connection, many)
    const { run, report } = importOriginal()
    assert.equal(report.imported, 6000)
    assert.match(run.stderr, /^5\d{3} of 6014 row\(s\) read \(\d+%\)$/m)
    assert.match(run.stderr, /^6014 of 6014 row\(s\) read \(100%\)$/m)
    const sample = many[4321]
    assert.equal((await sessionOf(stack, sample.key)).body.openId, sample.openId)
  })

  it('announces imported users to the webhooks as registered ones, without a key', async () => {
    const newcomer = { openId: 'oNewcomer', key: originalKey(), lastUsed: now - DAY }
    await insertRows(original.connection, [newcomer])
    extraEnv = {
      WEBHOOK_URL: 'http://127.0.0.1:9/hooks',
      WEBHOOK_SECRET: `whsec_${randomBytes(24).toString('base64')}`,
    }
    try {
      assert.equal(importOriginal().report.imported, 1)
    } finally {
      extraEnv = {}
    }
    const events = await stack.service.db.kysely
      .selectFrom('webhook_events')
      .innerJoin('identities', 'identities.user_id', 'webhook_events.user_id')
      .select(['webhook_events.type', 'webhook_events.body'])
      .where('identities.subject', '=', newcomer.openId)
      .orderBy('webhook_events.seq')
      .execute()
    assert.deepEqual(
      events.map((event) => event.type),
      ['user.created', 'session.started'],
    )
    const started = JSON.parse(events[1].body) as { data: Record<string, unknown> }
    assert.equal(started.data.openId, newcomer.openId)
    assert.equal(
      started.data.expiresAt,
      new Date(Math.floor(newcomer.lastUsed / 1000) * 1000 + 30 * DAY).toISOString(),
    )
    for (const event of events) {
      assert.ok(!event.body.includes(newcomer.key) && !event.body.includes(`wx-${newcomer.openId}`))
    }
  })
})
