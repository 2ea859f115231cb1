import assert from 'node:assert/strict'
import { sql } from 'kysely'
import { after, before, describe, it } from 'node:test'
import { createDb } from '../../src/db/database.js'
import { migrateTo, migrateToLatest } from '../../src/db/migrate.js'
import { generateSecret, hashSecret } from '../../src/lib/secrets.js'
import { freshDatabase } from '../helpers/database.js'
import { call, MEDIA_TYPE, startService } from '../helpers/service.js'
import { SANDBOX_APP } from '../../src/sandbox/routes.js'
import {
  logout,
  mintLoginCode,
  registerMessenger,
  registerUniversity,
  sessionOf,
  startStack,
  userRowOf,
  type Stack,
} from '../helpers/stack.js'
import {
  newWebhookSecret,
  startWebhookReceiver,
  type DeliveredEvent,
  type WebhookReceiver,
} from '../helpers/webhook-receiver.js'

// Issue 46: sessions per device (docs/sessions.md, "Devices"). A student with the mini-program on
// a phone and in the desktop messenger holds two live sessions; neither signs the other out.

const PHONE = 'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) MicroMessenger/8.0.54'
const DESKTOP = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) WindowsWechat MiniProgramEnv/Windows'
const MINUTE = 60_000

describe('sessions per device', () => {
  let stack: Stack
  let receiver: WebhookReceiver
  const secret = newWebhookSecret()

  before(async () => {
    receiver = await startWebhookReceiver(secret)
    stack = await startStack({
      WEBHOOK_URL: receiver.url,
      WEBHOOK_SECRET: secret,
      SESSIONS_PER_USER: '3',
    })
  })
  after(async () => {
    await stack.close()
    await receiver.close()
  })

  const url = (path: string) => `${stack.service.url}${path}`
  const authorized = (sessionKey: string) => ({ headers: { authorization: sessionKey } })
  const listOf = (sessionKey: string) => call(url('/sessions'), authorized(sessionKey))
  /** The sessions of `GET /sessions`, as the caller of `sessionKey` sees them. */
  const sessionsOf = async (sessionKey: string) =>
    (await listOf(sessionKey)).body.sessions as {
      id: string
      device: string | null
      current: boolean
    }[]
  const advance = (ms: number) => stack.service.clock.advance(ms)

  /** Waits for the user's delivered events to number `count`; their types (and reasons). */
  async function eventsOf(openId: string, count: number): Promise<string[]> {
    const of = () =>
      receiver
        .delivered()
        .filter((event) => event.data.openId === openId)
        .map(kind)
    const deadline = Date.now() + 5000
    while (of().length < count && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    return of()
  }
  const kind = (event: DeliveredEvent) =>
    event.data.reason === undefined ? event.type : `${event.type}:${event.data.reason as string}`

  it('a second device registers without ending the first: both keys work, each names its own session', async () => {
    const phone = await registerMessenger(stack, undefined, PHONE)
    const desktop = await registerMessenger(stack, phone.openId, DESKTOP)
    // Calls alternate between the two devices, as a student's would.
    for (const key of [phone.sessionKey, desktop.sessionKey, phone.sessionKey]) {
      assert.equal((await sessionOf(stack, key)).status, 200)
    }
    const onPhone = (await sessionOf(stack, phone.sessionKey)).body
    const onDesktop = (await sessionOf(stack, desktop.sessionKey)).body
    assert.notEqual(onPhone.sessionId, onDesktop.sessionId)

    const listed = await listOf(desktop.sessionKey)
    assert.equal(listed.status, 200)
    assert.equal(listed.headers.get('content-type'), MEDIA_TYPE)
    const sessions = listed.body.sessions as Record<string, unknown>[]
    assert.deepEqual(
      sessions.map((one) => one.id).sort(),
      [onPhone.sessionId, onDesktop.sessionId].sort(),
    )
    const byId = new Map(sessions.map((one) => [one.id, one]))
    assert.deepEqual(Object.keys(byId.get(onDesktop.sessionId)!).sort(), [
      'createdAt',
      'current',
      'device',
      'expiresAt',
      'id',
      'lastUsedAt',
    ])
    assert.equal(byId.get(onDesktop.sessionId)!.current, true)
    assert.equal(byId.get(onPhone.sessionId)!.current, false)
    assert.equal(byId.get(onPhone.sessionId)!.device, PHONE)
    assert.equal(byId.get(onDesktop.sessionId)!.device, DESKTOP)
    assert.equal(byId.get(onPhone.sessionId)!.expiresAt, onPhone.expiresAt)
    // Never a key, nor its hash.
    assert.ok(!listed.text.includes(phone.sessionKey) && !listed.text.includes(desktop.sessionKey))
    assert.ok(!listed.text.includes(hashSecret(phone.sessionKey)))
    assert.deepEqual(await eventsOf(phone.openId, 3), [
      'user.created',
      'session.started',
      'session.started',
    ])
  })

  it('the device label keeps at most 256 characters of the User-Agent, and none without one', async () => {
    const long = `Agent/${'x'.repeat(400)}`
    const first = await registerMessenger(stack, undefined, long)
    const second = await registerMessenger(stack, first.openId, '')
    const devices = (await sessionsOf(first.sessionKey)).map((one) => [one.current, one.device])
    assert.deepEqual(
      devices.sort((a, b) => Number(b[0]) - Number(a[0])),
      [
        [true, long.slice(0, 256)],
        [false, null],
      ],
    )
    assert.equal((await sessionOf(stack, second.sessionKey)).status, 200)
  })

  it('the app names the device with the registration body’s device: at most 64 characters, in place of the User-Agent', async () => {
    const register = async (device: unknown, openId?: string) =>
      call(url('/register/messenger'), {
        method: 'POST',
        headers: { 'user-agent': PHONE },
        json: {
          appId: SANDBOX_APP.appId,
          appSecret: SANDBOX_APP.appSecret,
          code: (await mintLoginCode(stack, openId)).code,
          device,
        },
      })
    const named = await register('Ada’s phone — 微信')
    assert.equal(named.status, 200, named.text)
    const key = named.body.sessionKey as string
    assert.deepEqual(
      (await sessionsOf(key)).map((one) => one.device),
      ['Ada’s phone — 微信'],
    )
    for (const device of ['x'.repeat(65), 'y'.repeat(300)]) {
      const refused = await register(device)
      assert.equal(refused.status, 400, JSON.stringify(device))
      assert.deepEqual(refused.body, { error: '@bad-request/invalid-value' })
    }
    assert.equal((await register('x'.repeat(64))).status, 200)
    // An empty name is none: the User-Agent labels the session.
    const unnamed = await register('')
    assert.equal(unnamed.status, 200)
    const devices = await sessionsOf(unnamed.body.sessionKey as string)
    assert.deepEqual(
      devices.filter((one) => one.current).map((one) => one.device),
      [PHONE],
    )
  })

  it('logging out on one device leaves the other at its tier; the last logout nullifies the tokens', async () => {
    const phone = await registerUniversity(stack, 'two-devices@example.edu')
    const desktop = await registerMessenger(stack, phone.openId, DESKTOP)
    assert.equal((await sessionOf(stack, desktop.sessionKey)).body.tier, 'university-registered')

    await logout(stack, phone.sessionKey)
    assert.equal((await sessionOf(stack, phone.sessionKey)).status, 401)
    const after = await sessionOf(stack, desktop.sessionKey)
    assert.equal(after.status, 200)
    assert.equal(after.body.tier, 'university-registered')
    const row = await userRowOf(stack, phone.openId)
    assert.notEqual(row.university_token, null)
    assert.notEqual(row.messenger_session_key, null)

    await logout(stack, desktop.sessionKey)
    const last = await userRowOf(stack, phone.openId)
    assert.equal(last.university_token, null)
    assert.equal(last.messenger_session_key, null)
    assert.deepEqual(await eventsOf(phone.openId, 7), [
      'user.created',
      'session.started',
      'university.linked',
      'session.started',
      'session.ended:logout',
      'session.ended:logout',
      'university.unlinked:logout',
    ])
  })

  it('the university link survives every registration below and at the cap', async () => {
    const first = await registerUniversity(stack, 'survives@example.edu')
    for (let i = 0; i < 4; i += 1) {
      const next = await registerMessenger(stack, first.openId)
      assert.equal((await sessionOf(stack, next.sessionKey)).body.tier, 'university-registered')
    }
  })

  it('past SESSIONS_PER_USER the least recently used session ends, reason rotation', async () => {
    const a = await registerMessenger(stack, undefined, 'device-a')
    advance(2 * MINUTE)
    const b = await registerMessenger(stack, a.openId, 'device-b')
    advance(2 * MINUTE)
    const c = await registerMessenger(stack, a.openId, 'device-c')
    advance(2 * MINUTE)
    // `a` is used again: now `b` is the least recently used. (Its id is read on `a`'s key: a
    // look with `b`'s own would be a use of `b`.)
    const listed = await sessionsOf(a.sessionKey)
    const bId = listed.find((one) => one.device === 'device-b')!.id
    advance(2 * MINUTE)
    assert.equal((await sessionOf(stack, a.sessionKey)).status, 200)
    advance(2 * MINUTE)
    const d = await registerMessenger(stack, a.openId, 'device-d')
    const devices = (await sessionsOf(d.sessionKey)).map((one) => one.device)
    // Most recently used first.
    assert.deepEqual(devices, ['device-d', 'device-a', 'device-c'])
    assert.equal((await sessionOf(stack, b.sessionKey)).status, 401)
    for (const live of [a, c, d]) {
      assert.equal((await sessionOf(stack, live.sessionKey)).status, 200)
    }
    await eventsOf(a.openId, 6)
    const ended = receiver
      .delivered()
      .filter((event) => event.data.openId === a.openId && event.type === 'session.ended')
    assert.deepEqual(
      ended.map((event) => [event.data.sessionId as string, event.data.reason as string]),
      [[bId, 'rotation']],
    )
    // The rotation's `session.ended` comes before the new session's `session.started`.
    assert.deepEqual((await eventsOf(a.openId, 6)).slice(-2), [
      'session.ended:rotation',
      'session.started',
    ])
  })

  it('an expired session no longer counts toward the cap, pruned or not', async () => {
    const first = await registerMessenger(stack)
    const second = await registerMessenger(stack, first.openId)
    // Only `second` is kept alive.
    for (let i = 0; i < 31; i += 1) {
      advance(86_400_000)
      assert.equal((await sessionOf(stack, second.sessionKey)).status, 200)
    }
    const third = await registerMessenger(stack, first.openId)
    const fourth = await registerMessenger(stack, first.openId)
    for (const live of [second, third, fourth]) {
      assert.equal((await sessionOf(stack, live.sessionKey)).status, 200)
    }
  })

  it('DELETE /sessions/{id} ends another device; an id not the caller’s live session is 404 unknown-session', async () => {
    const phone = await registerMessenger(stack, undefined, PHONE)
    const desktop = await registerMessenger(stack, phone.openId, DESKTOP)
    const stranger = await registerMessenger(stack)
    const desktopId = (await sessionOf(stack, desktop.sessionKey)).body.sessionId as string
    const strangerId = (await sessionOf(stack, stranger.sessionKey)).body.sessionId as string

    // Another user's session: not found, and it lives on.
    const foreign = await call(url(`/sessions/${strangerId}`), {
      method: 'DELETE',
      ...authorized(phone.sessionKey),
    })
    assert.equal(foreign.status, 404)
    assert.equal(foreign.headers.get('content-type'), MEDIA_TYPE)
    assert.deepEqual(foreign.body, { error: '@not-found/unknown-session' })
    assert.equal((await sessionOf(stack, stranger.sessionKey)).status, 200)
    for (const id of ['no-such-session', 'x'.repeat(90)]) {
      const unknown = await call(url(`/sessions/${id}`), {
        method: 'DELETE',
        ...authorized(phone.sessionKey),
      })
      assert.deepEqual(
        [unknown.status, unknown.body],
        [404, { error: '@not-found/unknown-session' }],
      )
    }

    const ended = await call(url(`/sessions/${desktopId}`), {
      method: 'DELETE',
      ...authorized(phone.sessionKey),
    })
    assert.deepEqual([ended.status, ended.body], [200, {}])
    assert.equal((await sessionOf(stack, desktop.sessionKey)).status, 401)
    assert.equal((await sessionOf(stack, phone.sessionKey)).status, 200)
    const again = await call(url(`/sessions/${desktopId}`), {
      method: 'DELETE',
      ...authorized(phone.sessionKey),
    })
    assert.equal(again.status, 404)
    const missing = await call(url(`/sessions/${desktopId}`), { method: 'DELETE' })
    assert.deepEqual(missing.body, { error: '@forbidden/missing-authorization-header' })
  })

  it('POST /logout?scope=all ends every session of the user; another scope is 400', async () => {
    const phone = await registerUniversity(stack, 'everywhere@example.edu')
    const desktop = await registerMessenger(stack, phone.openId, DESKTOP)
    const bad = await call(url('/logout?scope=elsewhere'), {
      method: 'POST',
      ...authorized(phone.sessionKey),
    })
    assert.deepEqual([bad.status, bad.body], [400, { error: '@bad-request/invalid-value' }])
    // Issue 63: `scope` given twice is an invalid value too, a code the OpenAPI document lists.
    const twice = await call(url('/logout?scope=all&scope=all'), {
      method: 'POST',
      ...authorized(phone.sessionKey),
    })
    assert.deepEqual([twice.status, twice.body], [400, { error: '@bad-request/invalid-value' }])
    assert.equal((await sessionOf(stack, phone.sessionKey)).status, 200)

    const all = await call(url('/logout?scope=all'), {
      method: 'POST',
      ...authorized(desktop.sessionKey),
    })
    assert.deepEqual([all.status, all.body], [200, {}])
    for (const key of [phone.sessionKey, desktop.sessionKey]) {
      assert.equal((await sessionOf(stack, key)).status, 401)
    }
    assert.equal((await userRowOf(stack, phone.openId)).university_token, null)
    const events = await eventsOf(phone.openId, 7)
    assert.deepEqual(events.slice(-3), [
      'session.ended:logout',
      'session.ended:logout',
      'university.unlinked:logout',
    ])
  })

  it('an operator revokes one session or all of them (the service the console and the command line call)', async () => {
    const phone = await registerMessenger(stack, undefined, PHONE)
    const desktop = await registerMessenger(stack, phone.openId, DESKTOP)
    const { accounts } = stack.service
    const origin = { actor: 'cli:test', ip: null }
    const desktopId = (await sessionOf(stack, desktop.sessionKey)).body.sessionId as string
    assert.equal(
      await accounts.revoke({ openId: phone.openId, which: { sessionId: desktopId }, origin }),
      1,
    )
    assert.equal((await sessionOf(stack, desktop.sessionKey)).status, 401)
    assert.equal((await sessionOf(stack, phone.sessionKey)).status, 200)
    assert.equal(
      await accounts.revoke({ openId: phone.openId, which: { sessionId: desktopId }, origin }),
      0,
    )
    assert.equal(await accounts.revoke({ openId: phone.openId, which: 'all', origin }), 1)
    assert.equal((await sessionOf(stack, phone.sessionKey)).status, 401)
    assert.equal(await accounts.revoke({ openId: 'nobody', which: 'all', origin }), 'unknown-user')
    assert.deepEqual((await eventsOf(phone.openId, 5)).slice(-2), [
      'session.ended:revoked',
      'session.ended:revoked',
    ])
  })

  it('erasure ends every session, each with its own session.ended', async () => {
    const phone = await registerUniversity(stack, 'erase-both@example.edu')
    await registerMessenger(stack, phone.openId, DESKTOP)
    const erased = await call(url('/user'), { method: 'DELETE', ...authorized(phone.sessionKey) })
    assert.equal(erased.status, 200)
    assert.deepEqual((await eventsOf(phone.openId, 8)).slice(-4), [
      'session.ended:erasure',
      'session.ended:erasure',
      'university.unlinked:erasure',
      'user.erased',
    ])
  })

  it('/metrics counts live sessions and the users holding more than one', async () => {
    const text = await (await fetch(url('/metrics'))).text()
    const value = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1])
    const live = await stack.service.db.kysely
      .selectFrom('sessions')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('expires_at', '>', stack.service.clock.now().getTime())
      .executeTakeFirstOrThrow()
    assert.equal(value('campusgate_sessions_live'), Number(live.n))
    assert.ok(value('campusgate_users_with_several_sessions') >= 1)
  })
})

describe('SESSIONS_PER_USER=1: the original rule', () => {
  it('registering again ends the old key, reason rotation', async () => {
    const stack = await startStack({ SESSIONS_PER_USER: '1' })
    try {
      const first = await registerUniversity(stack, 'one-key@example.edu')
      const second = await registerMessenger(stack, first.openId)
      assert.equal((await sessionOf(stack, first.sessionKey)).status, 401)
      const now = await sessionOf(stack, second.sessionKey)
      // The link survives the rotation, as it always did.
      assert.equal(now.body.tier, 'university-registered')
      assert.equal(
        (
          await call(`${stack.service.url}/sessions`, {
            headers: { authorization: second.sessionKey },
          })
        ).body.sessions.length,
        1,
      )
    } finally {
      await stack.close()
    }
  })

  it('refuses a value below 1 or past the bound at start-up, naming the variable', async () => {
    for (const value of ['0', '-1', 'two', '101']) {
      await assert.rejects(startService({ SESSIONS_PER_USER: value }), /SESSIONS_PER_USER/)
    }
  })
})

describe('migration 0013 (sessions per device)', () => {
  it("rolls back to one session per user, keeping each user's most recently used", async () => {
    const database = await freshDatabase()
    const db = createDb(database.url, { poolSize: 2 })
    try {
      // The schema as it stood before identities (migration 0015), which this way back needs.
      await migrateTo(db, '0014_console_roles')
      const now = Date.parse('2026-01-01T00:00:00Z')
      await sql`INSERT INTO users (id, open_id, created_at, updated_at)
        VALUES ('u-two', 'open-two', ${now}, ${now})`.execute(db.kysely)
      for (const [id, touchedAt] of [
        ['s-older', now],
        ['s-newer', now + 60_000],
      ] as const) {
        await db.kysely
          .insertInto('sessions')
          .values({
            id,
            user_id: 'u-two',
            key_hash: hashSecret(id),
            created_at: now,
            expires_at: now + 86_400_000,
            touched_at: touchedAt,
            device: 'Phone/1.0',
          })
          .execute()
      }
      await migrateTo(db, '0012_sessions_expiry_floor')
      const left = await db.kysely.selectFrom('sessions').select('id').execute()
      assert.deepEqual(
        left.map((row) => row.id),
        ['s-newer'],
      )
      await migrateToLatest(db)
    } finally {
      await db.kysely.destroy()
      await database.drop()
    }
  })

  it('keeps every key issued before it working', async () => {
    const database = await freshDatabase()
    const db = createDb(database.url, { poolSize: 2 })
    try {
      await migrateTo(db, '0012_sessions_expiry_floor')
      const key = generateSecret()
      const now = Date.parse('2026-01-01T00:00:00Z')
      await sql`INSERT INTO users (id, open_id, created_at, updated_at)
        VALUES ('u-old', 'open-old', ${now}, ${now})`.execute(db.kysely)
      await db.kysely
        .insertInto('sessions')
        .values({
          id: 's-old',
          user_id: 'u-old',
          key_hash: hashSecret(key),
          created_at: now,
          expires_at: now + 30 * 86_400_000,
          touched_at: now,
          expiry_floor: now + 30 * 86_400_000,
        })
        .execute()
      await migrateToLatest(db)
      await db.kysely.destroy()
      const service = await startService({ DATABASE_URL: database.url })
      try {
        const answer = await call(`${service.url}/session`, { headers: { authorization: key } })
        assert.equal(answer.status, 200, answer.text)
        assert.equal(answer.body.openId, 'open-old')
        assert.equal(answer.body.sessionId, 's-old')
      } finally {
        await service.close()
      }
    } finally {
      await database.drop()
    }
  })
})
