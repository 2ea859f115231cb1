// login() that reuses a live key, onSessionChange, and a user's devices: sessions() and
// endSession() (issue 47).
import assert from 'node:assert/strict'
import { after, before, beforeEach, describe, it } from 'node:test'
import {
  CampusgateError,
  createCampusgate,
  type Campusgate,
  type SessionChange,
} from 'campusgate-miniprogram'
import { SYSTEM } from '../../../src/audit/audit.js'
import { SANDBOX_APP } from '../../../src/sandbox/routes.js'
import { call, startService, type RunningService } from '../../../test/helpers/service.js'
import { createWx, type TestPlatform } from './platforms.js'

const KEY = 'campusgate.sessionKey'

async function rejection(promise: Promise<unknown>): Promise<CampusgateError> {
  const error = await promise.then(
    () => assert.fail('expected a rejection'),
    (reason: unknown) => reason,
  )
  assert.ok(error instanceof CampusgateError, String(error))
  return error
}

describe('campusgate-miniprogram: login, onSessionChange and the devices of a user', () => {
  let service: RunningService
  let users = 0
  let openId: string
  /** One phone of the user, and its kit. */
  let wx: TestPlatform
  let campusgate: Campusgate
  let changes: SessionChange[]

  before(async () => {
    service = await startService()
  })
  after(() => service.close())

  /** A device of the current user: its own storage, its own kit. */
  function device(): { wx: TestPlatform; campusgate: Campusgate; changes: SessionChange[] } {
    const phone = createWx(`${service.url}/_sandbox/messenger`, openId)
    const kit = createCampusgate({
      baseUrl: service.url,
      appId: SANDBOX_APP.appId,
      platform: phone,
    })
    const heard: SessionChange[] = []
    kit.onSessionChange((change) => heard.push(change))
    return { wx: phone, campusgate: kit, changes: heard }
  }

  beforeEach(() => {
    users += 1
    openId = `sessions-user-${process.pid}-${users}`
    ;({ wx, campusgate, changes } = device())
  })

  const paths = (phone = wx): string[] =>
    phone.sent.map((sent) => `${sent.method} ${new URL(sent.url).pathname}`)

  it('login() reuses a live kept key, checked with GET /session, and tells the app it signed in once', async () => {
    const first = await campusgate.login()
    const key = wx.storage.get(KEY)
    assert.deepEqual(changes, [{ reason: 'signed-in', session: first }])
    assert.equal(first.openId, openId)
    // "Log in on launch", three launches: one registration.
    for (let launch = 0; launch < 3; launch += 1) {
      const again = await campusgate.login()
      assert.equal(again.openId, openId)
    }
    assert.equal(wx.logins, 1)
    assert.equal(wx.storage.get(KEY), key, 'the key is not rotated')
    assert.deepEqual(paths(), [
      'POST /register/messenger',
      'GET /session',
      'GET /session',
      'GET /session',
      'GET /session',
    ])
    assert.equal(changes.length, 1)
  })

  it('login({ fresh: true }) registers anew even with a live key', async () => {
    await campusgate.login()
    const key = wx.storage.get(KEY)
    const fresh = await campusgate.login({ fresh: true })
    assert.equal(fresh.openId, openId)
    assert.equal(wx.logins, 2)
    assert.notEqual(wx.storage.get(KEY), key)
    assert.deepEqual(
      changes.map((change) => change.reason),
      ['signed-in', 'signed-in'],
    )
  })

  it('login() signs in again when the kept key has ended, as a renewal', async () => {
    await campusgate.login()
    const key = wx.storage.get(KEY) as string
    await call(`${service.url}/logout`, { method: 'POST', headers: { authorization: key } })
    const renewed = await campusgate.login()
    assert.equal(renewed.openId, openId)
    assert.equal(wx.logins, 2)
    assert.deepEqual(
      changes.map((change) => change.reason),
      ['signed-in', 'renewed'],
    )
    assert.deepEqual(changes[1].session, renewed)
  })

  it('login() keeps the key and rejects when campusgate cannot say whether it lives', async () => {
    await campusgate.login()
    const key = wx.storage.get(KEY)
    const offline = createCampusgate({
      baseUrl: 'http://127.0.0.1:1',
      appId: SANDBOX_APP.appId,
      platform: wx,
    })
    const error = await rejection(offline.login())
    assert.equal(error.code, '@client/network-failed')
    assert.equal(wx.storage.get(KEY), key)
    assert.equal(wx.logins, 1)
  })

  it('tells every instance on the storageKey that a refused key was renewed, a logout and an erasure', async () => {
    const otherPage = createCampusgate({
      baseUrl: service.url,
      appId: SANDBOX_APP.appId,
      platform: wx,
    })
    const heardOnOtherPage: string[] = []
    const stop = otherPage.onSessionChange((change) => heardOnOtherPage.push(change.reason))
    await campusgate.login()
    // An operator revokes the device's session: the next call is refused, the kit signs in again.
    assert.equal(await service.accounts.revoke({ openId, which: 'all', origin: SYSTEM }), 1)
    const session = await otherPage.session()
    assert.equal(session.openId, openId)
    assert.deepEqual(
      changes.map((change) => change.reason),
      ['signed-in', 'renewed'],
    )
    assert.equal(changes[1].session?.tier, 'messenger-registered')
    stop()
    await campusgate.logout()
    await campusgate.login()
    await campusgate.erase()
    assert.deepEqual(
      changes.map((change) => change.reason),
      ['signed-in', 'renewed', 'signed-out', 'signed-in', 'erased'],
    )
    assert.deepEqual(
      changes.slice(2).map((change) => change.session === null),
      [true, false, true],
    )
    assert.deepEqual(heardOnOtherPage, ['signed-in', 'renewed'], 'until it stopped listening')
  })

  it("lists the user's devices, and ends another device's session or its own (needs sessions per device)", async () => {
    const phone = device()
    const desktop = device()
    await phone.campusgate.login()
    await desktop.campusgate.login()
    const listed = await phone.campusgate.sessions()
    assert.equal(listed.length, 2)
    const own = listed.find((entry) => entry.current)!
    const other = listed.find((entry) => !entry.current)!
    for (const entry of listed) {
      assert.deepEqual(Object.keys(entry).sort(), [
        'createdAt',
        'current',
        'device',
        'expiresAt',
        'id',
        'lastUsedAt',
      ])
    }
    // The phone ends the desktop's session: the desktop is signed out, and signs in again.
    await phone.campusgate.endSession(other.id)
    assert.equal((await desktop.campusgate.session()).openId, openId)
    assert.deepEqual(
      desktop.changes.map((change) => change.reason),
      ['signed-in', 'renewed'],
    )
    const unknown = await rejection(phone.campusgate.endSession(other.id))
    assert.equal(unknown.status, 404)
    assert.equal(unknown.code, '@not-found/unknown-session')
    // Its own session: the key has ended with it, and the kit forgets it.
    await phone.campusgate.endSession(own.id)
    assert.equal(phone.wx.storage.has(KEY), false)
    assert.deepEqual(
      phone.changes.map((change) => change.reason),
      ['signed-in', 'signed-out'],
    )
  })
})
