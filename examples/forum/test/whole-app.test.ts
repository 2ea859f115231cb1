// The whole app, as docs/building-the-app.md draws it: campusgate, the forum (guarded by
// campusgate-node: introspection, a cache, lifecycle events), and two devices of one student, each
// a mini-program with the kit and its own storage (issue 47).
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import type { WebhookEvent } from 'campusgate-node'
import { Webhook } from 'standardwebhooks'
import {
  CampusgateError,
  createCampusgate,
  type Campusgate,
  type SessionChange,
} from 'campusgate-miniprogram'
import { SYSTEM } from '../../../src/audit/audit.js'
import { SANDBOX_APP } from '../../../src/sandbox/routes.js'
import { freePort, startService, type RunningService } from '../../../test/helpers/service.js'
import { startSmtpSink, type SmtpSink } from '../../../test/helpers/smtp-sink.js'
import { createWx, type TestPlatform } from '../../../packages/miniprogram/test/platforms.js'
import { confirmByEmail } from '../../../packages/miniprogram/test/university.js'
import { createForum, type Forum, type Post } from '../src/forum.js'

const FORUM = { id: 'forum', secret: randomBytes(24).toString('base64url') }

interface Device {
  name: string
  wx: TestPlatform
  campusgate: Campusgate
  changes: SessionChange[]
  /** How many times this device registered at campusgate. */
  registrations(): number
}

describe('the whole app: campusgate, the forum and two devices of one student', () => {
  let smtp: SmtpSink
  let service: RunningService
  let forum: Forum
  let forumServer: Server
  let forumUrl: string
  const events: { event: WebhookEvent; at: number }[] = []
  const forumLog: string[] = []
  /** The requests campusgate served, by who sent them. */
  const served = { introspections: 0, sessionChecks: 0 }
  const openId = `student-${process.pid}`
  let phone: Device
  let desktop: Device
  let webhookSecret = ''

  before(async () => {
    smtp = await startSmtpSink()
    webhookSecret = `whsec_${randomBytes(32).toString('base64')}`
    // campusgate's address is chosen first: the forum asks it, and it sends the forum its events.
    const port = await freePort()
    forum = createForum({
      campusgateUrl: `http://127.0.0.1:${port}`,
      credentials: FORUM,
      webhookSecret,
      cacheTtlMs: 60_000,
      log: (line) => forumLog.push(line),
      onEvent: (event) => events.push({ event, at: Date.now() }),
    })
    forumServer = forum.app.listen(0, '127.0.0.1')
    await once(forumServer, 'listening')
    forumUrl = `http://127.0.0.1:${(forumServer.address() as AddressInfo).port}`
    service = await startService(
      {
        PORT: String(port),
        SMTP_URL: smtp.url,
        BACKEND_CREDENTIALS: `${FORUM.id}:${FORUM.secret}`,
        WEBHOOK_URL: `${forumUrl}/campusgate/events`,
        WEBHOOK_SECRET: webhookSecret,
      },
      {
        extend: (app) =>
          app.addHook('onRequest', async (request) => {
            if (request.url === '/introspect') served.introspections += 1
            if (request.url === '/session') served.sessionChecks += 1
          }),
      },
    )
    const device = (name: string): Device => {
      const wx = createWx(`${service.url}/_sandbox/messenger`, openId)
      const campusgate = createCampusgate({
        baseUrl: service.url,
        appId: SANDBOX_APP.appId,
        platform: wx,
        backends: [forumUrl],
      })
      const changes: SessionChange[] = []
      campusgate.onSessionChange((change) => changes.push(change))
      const registrations = () =>
        wx.sent.filter((sent) => sent.url.endsWith('/register/messenger')).length
      return { name, wx, campusgate, changes, registrations }
    }
    phone = device('phone')
    desktop = device('desktop')
  })
  after(async () => {
    await service?.close()
    await new Promise((resolve) => forumServer?.close(resolve))
    await forum?.close()
    await smtp?.stop()
  })

  const post = (device: Device, text: string, board = '/posts') =>
    device.campusgate.request<Post>({ url: `${forumUrl}${board}`, method: 'POST', data: { text } })
  const list = (device: Device, board = '/posts') =>
    device.campusgate.request<{ posts: Post[] }>({ url: `${forumUrl}${board}` })

  /** Resolves once the forum handled an event of `type` after `since`; its arrival time. */
  async function forumHeard(type: string, since: number): Promise<number> {
    const deadline = Date.now() + 15_000
    for (;;) {
      const found = events.find(({ event, at }) => event.type === type && at >= since)
      if (found !== undefined) return found.at
      if (Date.now() > deadline) assert.fail(`the forum never heard ${type}`)
      await sleep(20)
    }
  }

  async function refusal(promise: Promise<unknown>): Promise<CampusgateError> {
    const error = await promise.then(
      () => assert.fail('expected a refusal'),
      (reason: unknown) => reason,
    )
    assert.ok(error instanceof CampusgateError, String(error))
    return error
  }

  it('both devices sign in and post to the forum, neither signing the other out', async () => {
    await phone.campusgate.login()
    await desktop.campusgate.login()
    for (let round = 0; round < 3; round += 1) {
      assert.equal((await post(phone, `from the phone, ${round}`)).statusCode, 201)
      assert.equal((await post(desktop, `from the desktop, ${round}`)).statusCode, 201)
    }
    const seen = (await list(phone)).data.posts
    assert.equal(seen.length, 6)
    assert.ok(seen.every((entry) => entry.author === openId))
    assert.deepEqual((await list(desktop)).data.posts, seen)
    assert.equal(phone.registrations(), 1, 'the phone registered once')
    assert.equal(desktop.registrations(), 1, 'the desktop registered once')
    assert.deepEqual(
      [...phone.changes, ...desktop.changes].map((change) => change.reason),
      ['signed-in', 'signed-in'],
    )
    // The forum checked keys by introspection, never with the student's own GET /session.
    assert.ok(served.introspections >= 1)
    const devicesChecks = [phone, desktop]
      .flatMap((device) => device.wx.sent)
      .filter((sent) => sent.url === `${service.url}/session`).length
    assert.equal(served.sessionChecks, devicesChecks)
    assert.deepEqual(forumLog, [], 'no failed check, no refused event')
  })

  it('lets both devices into the campus board within a second of university.linked', async () => {
    for (const device of [phone, desktop]) {
      const refused = await refusal(list(device, '/campus/posts'))
      assert.equal(refused.status, 403)
      assert.equal(refused.code, '@forbidden/insufficient-registration-tier')
    }
    const asked = Date.now()
    const email = `${openId}@example.edu`
    await phone.campusgate.registerUniversity(email)
    await confirmByEmail(service, smtp, openId, email)
    const linked = await forumHeard('university.linked', asked)
    // The forum's cache believed both keys at tier 1 for a minute; the event dropped them.
    for (const device of [phone, desktop]) {
      const board = await list(device, '/campus/posts')
      assert.equal(board.statusCode, 200, device.name)
    }
    const took = Date.now() - linked
    assert.ok(took < 1000, `both in ${took} ms after university.linked`)
    assert.equal((await post(desktop, 'members only', '/campus/posts')).statusCode, 201)
    assert.equal(phone.registrations() + desktop.registrations(), 2, 'nobody registered again')
  })

  it('tells the phone, through onSessionChange, that an operator revoked its session', async () => {
    const { sessions } = (
      await phone.campusgate.request<{
        sessions: { id: string; current: boolean }[]
      }>({ url: '/sessions' })
    ).data
    const own = sessions.find((session) => session.current)!
    const since = Date.now()
    const revoked = await service.accounts.revoke({
      openId,
      which: { sessionId: own.id },
      origin: SYSTEM,
    })
    assert.equal(revoked, 1)
    // The forum learns of it (and forgets the key) before the phone's next call.
    await forumHeard('session.ended', since)
    assert.equal((await post(phone, 'still here?')).statusCode, 201)
    assert.deepEqual(
      phone.changes.map((change) => change.reason),
      ['signed-in', 'renewed'],
    )
    // The desktop's session lives on, and with it the student's tier.
    assert.equal(phone.changes[1].session?.tier, 'university-registered')
    assert.equal(phone.registrations(), 2)
    assert.equal((await post(desktop, 'unaffected', '/campus/posts')).statusCode, 201)
    assert.equal(desktop.registrations(), 1)
    assert.deepEqual(
      desktop.changes.map((change) => change.reason),
      ['signed-in'],
    )
  })

  it('leaves the other device working after a logout on one', async () => {
    const since = Date.now()
    await desktop.campusgate.logout()
    assert.deepEqual(
      desktop.changes.map((change) => change.reason),
      ['signed-in', 'signed-out'],
    )
    await forumHeard('session.ended', since)
    for (let i = 0; i < 3; i += 1) {
      assert.equal((await post(phone, `after the desktop left, ${i}`)).statusCode, 201)
      assert.equal((await list(phone, '/campus/posts')).statusCode, 200)
    }
    assert.equal(phone.registrations(), 2, 'no registration since the renewal')
    assert.equal(phone.changes.length, 2)
  })

  it('an erasure takes exactly the erased person’s posts, and a late copy of it never a new account’s of the same openId', async () => {
    const since = Date.now()
    const before = (await list(phone)).data.posts
    assert.ok(before.length > 0)
    const erasedId = before[0].authorId
    assert.ok(before.every((entry) => entry.authorId === erasedId && entry.author === openId))
    await phone.campusgate.erase()
    await forumHeard('user.erased', since)
    assert.deepEqual(forum.boards.public, [])

    // The same student registers again: the same openId, a new person.
    assert.equal((await post(phone, 'a fresh start')).statusCode, 201)
    const fresh = (await list(phone)).data.posts
    assert.equal(fresh.length, 1)
    assert.notEqual(fresh[0].authorId, erasedId)
    assert.equal(fresh[0].author, openId)

    // The erasure's event again, late (a replay from the console, a retry of another endpoint).
    const body = JSON.stringify({
      type: 'user.erased',
      timestamp: new Date().toISOString(),
      data: { userId: erasedId, openId },
    })
    const id = `msg_late_${randomBytes(8).toString('hex')}`
    const at = new Date()
    const late = await fetch(`${forumUrl}/campusgate/events`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': new Webhook(webhookSecret).sign(id, at, body),
      },
      body,
    })
    assert.ok(late.ok, String(late.status))
    assert.deepEqual(
      (await list(phone)).data.posts.map((entry) => entry.text),
      ['a fresh start'],
    )
  })
})
