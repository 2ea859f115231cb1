import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Config } from '../../src/config/types.js'
import { cipherFor } from '../../src/secrets-at-rest.js'
import { createServices } from '../../src/services.js'
import {
  registerMessenger,
  registerUniversity,
  sessionOf,
  startStack,
  userRowOf,
  type Stack,
} from '../helpers/stack.js'

const MINUTE = 60_000

/** docs/sessions.md, "Validity": SESSION_MAX_AGE, the absolute timeout since registration. */
describe('SESSION_MAX_AGE: a session ends that long after its registration however it is used', () => {
  let stack: Stack
  let short: Stack
  before(async () => {
    stack = await startStack({
      SESSION_TTL: '10m',
      SESSION_TOUCH_INTERVAL: '1m',
      SESSION_MAX_AGE: '25m',
    })
    // A cap shorter than the TTL.
    short = await startStack({ SESSION_TTL: '10m', SESSION_MAX_AGE: '5m' })
  })
  after(async () => {
    await stack.close()
    await short.close()
  })

  const sessionRow = (target: Stack, openId: string) =>
    target.service.db.kysely
      .selectFrom('sessions')
      .innerJoin('identities', 'identities.user_id', 'sessions.user_id')
      .select(['sessions.expires_at'])
      .where('identities.subject', '=', openId)
      .executeTakeFirst()
  const expiryEvents = (target: Stack, openId: string) =>
    target.service.db.kysely
      .selectFrom('audit_events')
      .innerJoin('identities', 'identities.user_id', 'audit_events.user_id')
      .select(['audit_events.actor'])
      .where('identities.subject', '=', openId)
      .where('audit_events.type', '=', 'expiry')
      .execute()

  it('GET /session never promises past it; the key in constant use ends there as by expiry', async () => {
    const clock = stack.service.clock
    const registeredAt = clock.now().getTime()
    const { sessionKey, openId } = await registerUniversity(stack)
    const expiresAt = async (): Promise<number> => {
      const response = await sessionOf(stack, sessionKey)
      assert.equal(response.status, 200, response.text)
      return Date.parse(response.body.expiresAt as string)
    }
    // Sliding as usual while the cap is far.
    clock.advance(8 * MINUTE)
    assert.equal(await expiresAt(), clock.now().getTime() + 10 * MINUTE)
    clock.advance(8 * MINUTE)
    // 16 minutes in: the TTL would reach 26, the cap says 25.
    assert.equal(await expiresAt(), registeredAt + 25 * MINUTE)
    assert.equal((await sessionRow(stack, openId))!.expires_at, registeredAt + 25 * MINUTE)
    for (const minute of [20, 23, 24]) {
      clock.advance(registeredAt + minute * MINUTE - clock.now().getTime())
      assert.equal(await expiresAt(), registeredAt + 25 * MINUTE, `minute ${minute}`)
    }
    clock.advance(registeredAt + 25 * MINUTE - clock.now().getTime())
    const ended = await sessionOf(stack, sessionKey)
    assert.equal(ended.status, 401)
    assert.deepEqual(ended.body, { error: '@unauthorized/invalid-session-key' })
    // Ended exactly as by expiry: the row gone, the credentials nullified, the trail says expiry.
    assert.equal(await sessionRow(stack, openId), undefined)
    const user = await userRowOf(stack, openId)
    assert.equal(user.messenger_session_key, null)
    assert.equal(user.university_token, null)
    assert.deepEqual(await expiryEvents(stack, openId), [{ actor: 'system' }])
  })

  it('registering again starts a new session with a new cap', async () => {
    const clock = stack.service.clock
    const first = await registerMessenger(stack)
    clock.advance(20 * MINUTE)
    const again = await registerMessenger(stack, first.openId)
    const response = await sessionOf(stack, again.sessionKey)
    assert.equal(Date.parse(response.body.expiresAt as string), clock.now().getTime() + 10 * MINUTE)
    clock.advance(9 * MINUTE)
    assert.equal((await sessionOf(stack, again.sessionKey)).status, 200)
  })

  it('a cap shorter than SESSION_TTL is the expiry registration answers; the pruner ends it unused', async () => {
    const clock = short.service.clock
    const registeredAt = clock.now().getTime()
    const { sessionKey, openId } = await registerMessenger(short)
    const response = await sessionOf(short, sessionKey)
    assert.equal(Date.parse(response.body.expiresAt as string), registeredAt + 5 * MINUTE)
    clock.advance(5 * MINUTE)
    const counts = await short.service.pruner.runOnce()
    assert.ok(counts !== null && counts.sessions >= 1)
    assert.equal(await sessionRow(short, openId), undefined)
    assert.equal((await sessionOf(short, sessionKey)).status, 401)
    assert.deepEqual(await expiryEvents(short, openId), [{ actor: 'system' }])
  })

  it('set later, it ends sessions older than it that were registered without it', async () => {
    // A session registered while SESSION_MAX_AGE was unset keeps its sliding expiry in the row.
    const clock = short.service.clock
    const loose: Config = {
      ...short.service.config,
      sessions: { ...short.service.config.sessions, maxAgeMs: null },
    }
    const before = createServices({
      config: loose,
      db: short.service.db,
      clock,
      cipher: cipherFor(loose).cipher,
      log: short.service.app.log,
    })
    const registeredAt = clock.now().getTime()
    const registered = await before.sessions.register(
      {
        platform: 'wechat',
        appId: 'wx-sandbox-app',
        openId: 'o-registered-before-the-cap',
        unionId: null,
        sessionKey: 'messenger-key',
      },
      { actor: 'api', ip: '127.0.0.1' },
    )
    await before.close()
    assert.equal(registered.expiresAt.getTime(), registeredAt + 10 * MINUTE)
    clock.advance(6 * MINUTE)
    // The running service (SESSION_MAX_AGE=5m) neither admits nor keeps it.
    const shown = await sessionOf(short, registered.sessionKey)
    assert.equal(shown.status, 401)
    assert.equal(await sessionRow(short, 'o-registered-before-the-cap'), undefined)
  })

  it('the pruner ends a session past the cap whose row still promises more, unused', async () => {
    const clock = short.service.clock
    const loose: Config = {
      ...short.service.config,
      sessions: { ...short.service.config.sessions, maxAgeMs: null },
    }
    const before = createServices({
      config: loose,
      db: short.service.db,
      clock,
      cipher: cipherFor(loose).cipher,
      log: short.service.app.log,
    })
    await before.sessions.register(
      {
        platform: 'wechat',
        appId: 'wx-sandbox-app',
        openId: 'o-pruned-past-the-cap',
        unionId: null,
        sessionKey: 'messenger-key',
      },
      { actor: 'api', ip: '127.0.0.1' },
    )
    await before.close()
    clock.advance(6 * MINUTE)
    assert.equal(await short.service.sessions.endExpired(100), 1)
    assert.equal(await sessionRow(short, 'o-pruned-past-the-cap'), undefined)
  })
})
