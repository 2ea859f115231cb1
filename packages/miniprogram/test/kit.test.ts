import assert from 'node:assert/strict'
import { after, before, beforeEach, describe, it } from 'node:test'
import {
  CampusgateError,
  createCampusgate,
  LOGIN_FAILED,
  MEDIA_TYPE,
  NETWORK_FAILED,
  STORAGE_FAILED,
  WIRE_ERRORS,
  type Campusgate,
} from 'campusgate-miniprogram'
import { SANDBOX_APP } from '../../../src/sandbox/routes.js'
import { addForumRoute } from '../../../test/helpers/app-routes.js'
import { call, freePort, startService, type RunningService } from '../../../test/helpers/service.js'
import { startSmtpSink, type SmtpSink } from '../../../test/helpers/smtp-sink.js'
import { confirmByEmail } from './university.js'
import { PLATFORMS, type TestPlatform } from './platforms.js'

const KEY = 'campusgate.sessionKey'
const DAY_MS = 86_400_000

for (const [platformName, createPlatform] of Object.entries(PLATFORMS)) {
  describe(`campusgate-miniprogram on ${platformName} against the running campusgate`, () => {
    let service: RunningService
    let smtp: SmtpSink
    let users = 0
    // The platform object, whichever of the three; named as WeChat's, which the others follow.
    let wx: TestPlatform
    let openId: string
    let campusgate: Campusgate

    before(async () => {
      smtp = await startSmtpSink()
      // Sandbox mode: campusgate serves the simulated messenger and university itself. One key
      // per user (the original rule): these tests end the kit's key by a registration elsewhere.
      service = await startService(
        { SMTP_URL: smtp.url, SESSIONS_PER_USER: '1' },
        { extend: addForumRoute },
      )
    })
    after(async () => {
      await service.close()
      await smtp.stop()
    })

    /** A new user on a new phone. */
    beforeEach(() => {
      users += 1
      openId = `kit-user-${process.pid}-${users}`
      wx = createPlatform(`${service.url}/_sandbox/messenger`, openId)
      campusgate = createCampusgate({
        baseUrl: service.url,
        appId: SANDBOX_APP.appId,
        platform: wx,
      })
    })

    const kept = (): string => wx.storage.get(KEY) as string
    const paths = (): string[] =>
      wx.sent.map((sent) => `${sent.method} ${new URL(sent.url).pathname}`)

    /** What another device of the same user, or the user's own curl, does to campusgate. */
    async function registerElsewhere(): Promise<string> {
      const minted = await call(`${service.url}/_sandbox/messenger/login-codes`, {
        method: 'POST',
        json: { openId },
      })
      const registered = await call(`${service.url}/register/messenger`, {
        method: 'POST',
        json: {
          appId: SANDBOX_APP.appId,
          appSecret: SANDBOX_APP.appSecret,
          code: minted.body.code,
        },
      })
      assert.equal(registered.status, 200, registered.text)
      return registered.body.sessionKey as string
    }

    async function statusOf(key: string): Promise<number> {
      return (await call(`${service.url}/session`, { headers: { authorization: key } })).status
    }

    async function rejection(promise: Promise<unknown>): Promise<CampusgateError> {
      try {
        await promise
      } catch (error) {
        assert.ok(error instanceof CampusgateError, String(error))
        return error
      }
      assert.fail('expected a rejection')
    }

    it('logs in with a platform code and keeps the key under storageKey', async () => {
      assert.equal(wx.sent.length, 0, 'creating the kit calls nothing')
      const signedIn = await campusgate.login()
      assert.equal(wx.logins, 1)
      // A sign-in is the registration and a look at the new key's session, which login() returns.
      assert.deepEqual(paths(), ['POST /register/messenger', 'GET /session'])
      assert.equal(signedIn.openId, openId)
      assert.equal(signedIn.tier, 'messenger-registered')
      const body = JSON.parse(wx.sent[0].body!)
      assert.equal(body.appId, SANDBOX_APP.appId)
      // The placeholder: the AppSecret stays on the server, in MESSENGER_APP_SECRETS.
      assert.equal(body.appSecret, 'server-held')
      assert.equal(typeof body.code, 'string')
      assert.match(kept(), /^[A-Za-z0-9_-]{43}$/)
      const session = await call(`${service.url}/session`, { headers: { authorization: kept() } })
      assert.equal(session.body.openId, openId)

      const other = createCampusgate({
        baseUrl: `${service.url}/`,
        appId: SANDBOX_APP.appId,
        platform: wx,
        storageKey: 'elsewhere',
      })
      await other.login()
      assert.match(wx.storage.get('elsewhere') as string, /^[A-Za-z0-9_-]{43}$/)
      assert.notEqual(wx.storage.get('elsewhere'), wx.storage.get(KEY))
    })

    it('refuses an appSecret option, which would ship the AppSecret inside the mini-program', () => {
      const options = {
        baseUrl: service.url,
        appId: SANDBOX_APP.appId,
        appSecret: SANDBOX_APP.appSecret,
        platform: wx,
      }
      assert.throws(() => createCampusgate(options), {
        name: 'TypeError',
        message: /appSecret.*MESSENGER_APP_SECRETS/,
      })
      assert.equal(wx.sent.length, 0)
    })

    it('sends the v1 Accept and the kept key, whatever the caller put in its header', async () => {
      await campusgate.login()
      const response = await campusgate.request<{ openId: string }>({
        url: '/session',
        header: { accept: 'text/html', authorization: 'not-mine', 'X-Trace-Id': 'trace-1' },
      })
      assert.equal(response.statusCode, 200)
      assert.equal(response.data.openId, openId)
      assert.equal(response.header['content-type'], MEDIA_TYPE)
      const sent = wx.sent.at(-1)!
      assert.equal(sent.url, `${service.url}/session`)
      assert.equal(sent.method, 'GET')
      const names = Object.keys(sent.header).map((name) => name.toLowerCase())
      assert.equal(names.filter((name) => name === 'accept').length, 1)
      assert.equal(names.filter((name) => name === 'authorization').length, 1)
      assert.equal(sent.header.Accept, MEDIA_TYPE)
      assert.equal(sent.header.Authorization, kept())
      assert.equal(sent.header['X-Trace-Id'], 'trace-1')

      await campusgate.registerUniversity('headers@example.edu')
      const post = wx.sent.at(-1)!
      assert.equal(post.header['Content-Type'], 'application/json')
      assert.deepEqual(JSON.parse(post.body!), { email: 'headers@example.edu' })
    })

    it('signs in first when no key is kept', async () => {
      const session = await campusgate.session()
      assert.equal(session.openId, openId)
      assert.deepEqual(paths(), ['POST /register/messenger', 'GET /session'])
    })

    for (const [how, endElsewhere] of [
      [
        'a logout elsewhere',
        async (key: string) => {
          const logout = await call(`${service.url}/logout`, {
            method: 'POST',
            headers: { authorization: key },
          })
          assert.equal(logout.status, 200)
        },
      ],
      ['a registration on another device', async () => void (await registerElsewhere())],
      ['expiry', async () => service.clock.advance(31 * DAY_MS)],
    ] as const) {
      it(`logs in once more and retries once after ${how} ended the key`, async () => {
        await campusgate.login()
        const old = kept()
        await endElsewhere(old)
        assert.equal(await statusOf(old), 401)
        wx.sent.length = 0
        const session = await campusgate.session()
        assert.equal(session.openId, openId)
        assert.equal(wx.logins, 2)
        assert.deepEqual(paths(), [
          'GET /session',
          'POST /register/messenger',
          'GET /session',
          'GET /session',
        ])
        assert.notEqual(kept(), old)
        assert.equal(wx.sent[3].header.Authorization, kept())
      })
    }

    it('shares one new login among five requests that fail at once', async () => {
      await campusgate.login()
      await registerElsewhere()
      wx.sent.length = 0
      const sessions = await Promise.all(Array.from({ length: 5 }, () => campusgate.session()))
      assert.ok(sessions.every((session) => session.openId === openId))
      assert.equal(wx.logins, 2)
      assert.equal(paths().filter((path) => path === 'POST /register/messenger').length, 1)
      // Five refused, the new key's own look, five retried.
      assert.equal(paths().filter((path) => path === 'GET /session').length, 11)
      const retried = wx.sent.slice(-5).map((sent) => sent.header.Authorization)
      assert.deepEqual(retried, Array(5).fill(kept()))
    })

    it('shares one new login among the kit instances of one storageKey', async () => {
      // One instance per page, as the README's example reads: both keep the key under one storageKey.
      const otherPage = createCampusgate({
        baseUrl: service.url,
        appId: SANDBOX_APP.appId,
        platform: wx,
      })
      await campusgate.login()
      await registerElsewhere()
      wx.sent.length = 0
      const calls = [campusgate, otherPage, campusgate, otherPage].map((kit) => kit.session())
      const settled = await Promise.allSettled(calls)
      assert.deepEqual(
        settled.map((result) =>
          result.status === 'fulfilled' ? result.value.openId : String(result.reason),
        ),
        Array(4).fill(openId),
      )
      assert.equal(wx.logins, 2)
      assert.equal(paths().filter((path) => path === 'POST /register/messenger').length, 1)
      const retried = wx.sent.filter((sent) => sent.header.Authorization === kept())
      assert.deepEqual(
        retried.map((sent) => sent.statusCode),
        [200, 200, 200, 200, 200],
      )
    })

    it('gives up when the new key is refused too, without logging in again', async () => {
      await campusgate.login()
      await registerElsewhere()
      // Every key the kit gets is ended by another device before the kit can use it.
      wx.onResponse = async (sent, status) => {
        if (sent.url.endsWith('/register/messenger') && status === 200) await registerElsewhere()
      }
      wx.sent.length = 0
      const error = await rejection(campusgate.session())
      assert.equal(error.status, 401)
      assert.equal(error.code, '@unauthorized/invalid-session-key')
      assert.equal(wx.logins, 2)
      assert.deepEqual(paths(), ['GET /session', 'POST /register/messenger', 'GET /session'])
    })

    it('a suspended person: the one new login is refused 403 user-suspended, and the call rejects with it', async () => {
      await campusgate.login()
      const done = await service.accounts.suspend({
        openId,
        reason: null,
        origin: { actor: 'cli:test', ip: null },
      })
      assert.deepEqual(done, { ended: 1 })
      wx.sent.length = 0
      const error = await rejection(campusgate.session())
      assert.equal(error.status, 403)
      assert.equal(error.code, WIRE_ERRORS.userSuspended.code)
      assert.deepEqual(error.data, { error: '@forbidden/user-suspended' })
      // One login, no loop: the kept key refused, one registration refused.
      assert.equal(wx.logins, 2)
      assert.deepEqual(paths(), ['GET /session', 'POST /register/messenger'])
      const fresh = await rejection(campusgate.login({ fresh: true }))
      assert.equal(fresh.code, '@forbidden/user-suspended')
      assert.equal(wx.logins, 3)

      await service.accounts.restore({ openId, origin: { actor: 'cli:test', ip: null } })
      assert.equal((await campusgate.login()).openId, openId)
    })

    it("rejects with each of the seed's errors as a CampusgateError with its status and code", async () => {
      await campusgate.login()
      const cases: [() => Promise<unknown>, number, string][] = [
        [() => campusgate.registerUniversity(''), 400, '@bad-request/missing-required-keys'],
        [() => campusgate.registerUniversity('not-an-address'), 400, '@bad-request/invalid-email'],
        [
          () => campusgate.request({ url: '/authorize/university', auth: false }),
          400,
          '@bad-request/missing-required-query-parameters',
        ],
        [
          () =>
            campusgate.request({ url: '/authorize/university?universityRegistrationCode=nope' }),
          401,
          '@unauthorized/invalid-university-registration-code',
        ],
        [
          () => campusgate.request({ url: '/session', auth: false }),
          403,
          '@forbidden/missing-authorization-header',
        ],
        [
          () => campusgate.request({ url: '/forum' }),
          403,
          '@forbidden/insufficient-registration-tier',
        ],
        [() => campusgate.request({ url: '/no/such/route' }), 404, '@not-found/unknown-endpoint'],
      ]
      for (const [attempt, status, code] of cases) {
        const error = await rejection(attempt())
        assert.equal(error.status, status, code)
        assert.equal(error.code, code)
        assert.deepEqual(error.data, { error: code })
      }
      // None of them is an ended key: nobody logged in again.
      assert.equal(wx.logins, 1)

      const unknownApp = createCampusgate({
        baseUrl: service.url,
        appId: 'wx-not-this-app',
        platform: createPlatform(`${service.url}/_sandbox/messenger`, openId),
      })
      const refused = await rejection(unknownApp.login())
      assert.equal(refused.status, 401)
      assert.equal(refused.code, '@unauthorized/failed-messenger-authentication')

      // The no-loop test above shows @unauthorized/invalid-session-key.
    })

    it('rejects with status 0 when the platform cannot log in or reach campusgate', async () => {
      wx.failLogin = true
      const login = await rejection(campusgate.login())
      assert.equal(login.status, 0)
      assert.equal(login.code, LOGIN_FAILED)
      assert.equal(LOGIN_FAILED, '@client/login-failed')
      wx.failLogin = false

      const nowhere = createCampusgate({
        baseUrl: `http://127.0.0.1:${await freePort()}`,
        appId: SANDBOX_APP.appId,
        platform: wx,
      })
      const unreachable = await rejection(nowhere.request({ url: '/healthz', auth: false }))
      assert.equal(unreachable.status, 0)
      assert.equal(unreachable.code, NETWORK_FAILED)
      assert.equal(NETWORK_FAILED, '@client/network-failed', 'the code the README names')
      const relative = await rejection(campusgate.request({ url: 'session' }))
      assert.equal(relative.code, '@client/url-not-allowed')
    })

    it('rejects with storage-failed when the key cannot be stored, and keeps using it', async () => {
      wx.failStorage = true
      const error = await rejection(campusgate.login())
      assert.equal(error.status, 0)
      assert.equal(error.code, STORAGE_FAILED)
      assert.match(error.message, /exceed storage max size/)
      const session = await campusgate.session()
      assert.equal(session.openId, openId)
      assert.equal(wx.logins, 1, 'the key campusgate issued was not lost')
      assert.deepEqual(paths(), ['POST /register/messenger', 'GET /session'])
      const key = wx.sent[1].header.Authorization
      assert.equal(await statusOf(key), 200)

      // Once storage works again, a new key is stored as usual.
      wx.failStorage = false
      await registerElsewhere()
      assert.equal((await campusgate.session()).openId, openId)
      assert.equal(wx.logins, 2)
      assert.equal(wx.sent.at(-1)!.header.Authorization, kept())
    })

    it('walks tier 2 through the sandbox university', async () => {
      const email = `${openId}@example.edu`
      await campusgate.login()
      assert.equal((await campusgate.session()).tier, 'messenger-registered')
      await campusgate.registerUniversity(email)
      await confirmByEmail(service, smtp, openId, email)

      const session = await campusgate.session()
      assert.equal(session.tier, 'university-registered')
      assert.equal(typeof session.university?.linkedAt, 'string')
      assert.equal((await campusgate.request({ url: '/forum' })).statusCode, 200)
    })

    it('logs out: campusgate ends the key and the kit forgets it', async () => {
      await campusgate.logout()
      assert.equal(wx.sent.length, 0, 'no key kept: nothing to send')
      await campusgate.login()
      const key = kept()
      await campusgate.logout()
      assert.equal(wx.storage.has(KEY), false)
      assert.equal(await statusOf(key), 401)
      assert.deepEqual(paths(), ['POST /register/messenger', 'GET /session', 'POST /logout'])
      assert.equal(wx.sent[2].header.Authorization, key)

      // A key already ended elsewhere is logged out all the same.
      await campusgate.login()
      await registerElsewhere()
      await campusgate.logout()
      assert.equal(wx.storage.has(KEY), false)
    })

    it('keeps the key when logout or erase get no answer', async () => {
      await campusgate.login()
      const key = kept()
      const offline = createCampusgate({
        baseUrl: `http://127.0.0.1:${await freePort()}`,
        appId: SANDBOX_APP.appId,
        platform: wx,
      })
      for (const attempt of [() => offline.logout(), () => offline.erase()]) {
        const error = await rejection(attempt())
        assert.equal(error.status, 0)
        assert.equal(error.code, NETWORK_FAILED)
        assert.equal(kept(), key, 'an unanswered call ends nothing')
      }
      assert.equal(await statusOf(key), 200)
      assert.equal((await campusgate.session()).openId, openId)
      assert.equal(wx.logins, 1)
    })

    it('forgets the key when erase is answered 401', async () => {
      await campusgate.login()
      // Every key the kit gets is ended by another device before the kit can use it.
      await registerElsewhere()
      wx.onResponse = async (sent, status) => {
        if (sent.url.endsWith('/register/messenger') && status === 200) await registerElsewhere()
      }
      const error = await rejection(campusgate.erase())
      assert.equal(error.status, 401)
      assert.equal(wx.storage.has(KEY), false, 'a key campusgate refused is not kept')
    })

    it('erases the user: campusgate forgets the user and the kit forgets the key', async () => {
      await campusgate.login()
      const key = kept()
      await campusgate.erase()
      assert.equal(wx.storage.has(KEY), false)
      assert.deepEqual(paths(), ['POST /register/messenger', 'GET /session', 'DELETE /user'])
      assert.equal(await statusOf(key), 401)
      const row = await service.db.kysely
        .selectFrom('identities')
        .select('user_id')
        .where('subject', '=', openId)
        .executeTakeFirst()
      assert.equal(row, undefined)
    })
  })
}
