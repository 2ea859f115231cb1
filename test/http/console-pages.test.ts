import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import {
  consoleLink,
  fromConsole,
  getPage,
  signIn,
  TEST_KEY,
  type SignedIn,
} from '../helpers/console.js'
import { call } from '../helpers/service.js'
import {
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
  type WebhookReceiver,
} from '../helpers/webhook-receiver.js'

/**
 * SPEC.md, "Operator console": users, events, mail, audit and the overview, from outside over
 * HTTP. Each action is the command line's service call, audited with the operator's name.
 */
describe('the operator console: users, events, mail, audit, overview', () => {
  let stack: Stack
  let receiver: WebhookReceiver
  let alice: SignedIn
  let failing = false

  before(async () => {
    const secret = newWebhookSecret()
    receiver = await startWebhookReceiver(secret)
    receiver.answer = () => (failing ? 500 : 200)
    stack = await startStack({
      DATA_ENCRYPTION_KEY: TEST_KEY,
      WEBHOOK_URL: receiver.url,
      WEBHOOK_SECRET: secret,
      // Short, so an event dies within minutes and the console session (30 idle minutes) lives.
      WEBHOOK_RETRY_FOR: '2m',
    })
    // The command line stamps the links with the real clock: both start on one timeline.
    stack.service.clock.advance(Date.now() - stack.service.clock.now().getTime())
    alice = await signIn(stack.service, (await consoleLink(stack.service, 'alice')).token)
  })
  after(async () => {
    await stack.close()
    await receiver.close()
  })

  const url = (path: string) => `${stack.service.url}${path}`
  const page = async (path: string) => {
    const answer = await getPage(url(path), alice.cookie)
    assert.equal(answer.status, 200, `${path}: ${answer.text}`)
    return answer.text
  }
  const act = async (path: string, fields: Record<string, string> = {}) => {
    const answer = await fromConsole(stack.service, alice, path, fields)
    assert.equal(answer.status, 303, answer.text)
    return answer.headers.get('location') ?? ''
  }
  async function auditOf(type: string) {
    return stack.service.db.kysely
      .selectFrom('audit_events')
      .select(['type', 'actor', 'open_id', 'user_id', 'detail'])
      .where('type', '=', type)
      .orderBy('at', 'desc')
      .orderBy('id', 'desc')
      .execute()
  }

  it('finds a user by openId, university email (any case) or university subject', async () => {
    const user = await registerUniversity(stack, 'Found.Me@example.edu')
    const row = await userRowOf(stack, user.openId)
    assert.ok(row.university_subject)
    assert.ok(row.university_email)
    for (const query of [user.openId, row.university_email.toUpperCase(), row.university_subject]) {
      const text = await page(`/console/users?q=${encodeURIComponent(query)}`)
      assert.ok(
        text.includes(`href="/console/users/${encodeURIComponent(user.openId)}"`),
        `found by ${query}`,
      )
    }
    assert.match(await page('/console/users?q=nobody-at-all'), /No user matches/)
    assert.match(await page('/console/users'), /<label for="q">Search users<\/label>/)
  })

  it("shows a user's tier, session expiry, university identity, trail and events, and no secret", async () => {
    const user = await registerUniversity(stack, 'shown@example.edu')
    await stack.service.webhookWorker!.runOnce()
    const row = await userRowOf(stack, user.openId)
    const text = await page(`/console/users/${encodeURIComponent(user.openId)}`)
    assert.match(text, /university-registered/)
    assert.match(text, /<h2>Sessions<\/h2>/)
    assert.ok(text.includes(row.university_subject!))
    assert.ok(text.includes(row.university_email!))
    assert.match(text, /university-linked/, 'the audit trail')
    assert.match(text, /session\.started/, 'the lifecycle events')
    for (const secret of [
      user.sessionKey,
      row.messenger_session_key,
      row.university_token,
      row.university_binding,
    ]) {
      if (secret !== null) assert.ok(!text.includes(secret), 'no key, token or hash is shown')
    }
    const session = await stack.service.db.kysely
      .selectFrom('sessions')
      .select('key_hash')
      .where('user_id', '=', row.id)
      .executeTakeFirstOrThrow()
    assert.ok(!text.includes(session.key_hash))
    assert.match(text, /<button type="submit">Revoke session<\/button>/)
    assert.match(text, /<button type="submit">Revoke all sessions<\/button>/)
    assert.match(text, /<button type="submit">Unlink university<\/button>/)
    assert.match(text, /<label for="confirm">Type the openId to confirm<\/label>/)
    assert.match(text, /<button type="submit" class="danger">Erase user<\/button>/)
  })

  it('unlinks the university identity: tier 1 again, announced as revoked, audited with the operator', async () => {
    const user = await registerUniversity(stack, 'unlink@example.edu')
    const path = `/console/users/${encodeURIComponent(user.openId)}`
    assert.equal(await act(`${path}/unlink`), `${path}?done=unlinked`)
    assert.match(await page(`${path}?done=unlinked`), /The university identity is unlinked/)
    const session = await sessionOf(stack, user.sessionKey)
    assert.equal(session.body.tier, 'messenger-registered')
    const [audited] = await auditOf('university-unlinked')
    assert.equal(audited?.actor, 'console:alice')
    const events = await stack.service.db.kysely
      .selectFrom('webhook_events')
      .select('body')
      .where('type', '=', 'university.unlinked')
      .where('body', 'like', `%${user.openId}%`)
      .execute()
    assert.equal(events.length, 1)
    assert.equal(JSON.parse(events[0].body).data.reason, 'revoked')
    assert.equal(await act(`${path}/unlink`), `${path}?done=nothing`)
  })

  it("revokes one of the user's sessions, or all, as `campusgate sessions revoke` does, naming the operator", async () => {
    const phone = await registerMessenger(stack, undefined, 'Phone/1.0')
    const desktop = await registerMessenger(stack, phone.openId, 'Desktop/2.0')
    const path = `/console/users/${encodeURIComponent(phone.openId)}`
    const text = await page(path)
    assert.ok(text.includes('Phone/1.0') && text.includes('Desktop/2.0'), 'every device is listed')
    const desktopId = (await sessionOf(stack, desktop.sessionKey)).body.sessionId as string
    assert.equal(await act(`${path}/revoke`, { session: desktopId }), `${path}?done=revoked`)
    assert.equal((await sessionOf(stack, desktop.sessionKey)).status, 401)
    assert.equal((await sessionOf(stack, phone.sessionKey)).status, 200)
    const [audited] = await auditOf('logout')
    assert.equal(audited?.actor, 'console:alice')
    assert.equal(await act(`${path}/revoke`, { session: desktopId }), `${path}?done=nothing`)
    assert.equal(await act(`${path}/revoke`, { session: 'all' }), `${path}?done=revoked`)
    assert.equal((await sessionOf(stack, phone.sessionKey)).status, 401)
    assert.equal(await act(`${path}/revoke`, { session: 'all' }), `${path}?done=nothing`)
    // The "Revoke all sessions" button is shown only while there is something to revoke.
    assert.doesNotMatch(await page(path), /Revoke all sessions/)
  })

  it('erases a user only when the operator typed its openId', async () => {
    const user = await registerMessenger(stack)
    const path = `/console/users/${encodeURIComponent(user.openId)}`
    assert.equal(await act(`${path}/erase`, { confirm: 'someone-else' }), `${path}?done=mismatch`)
    assert.equal((await sessionOf(stack, user.sessionKey)).status, 200)
    assert.equal(await act(`${path}/erase`, { confirm: user.openId }), '/console/users?done=erased')
    assert.equal((await sessionOf(stack, user.sessionKey)).status, 401)
    const [audited] = await auditOf('erasure')
    assert.deepEqual([audited?.actor, audited?.open_id], ['console:alice', user.openId])
    assert.equal((await getPage(url(path), alice.cookie)).status, 404)
  })

  it('lists dead events with Retry and delivered ones with Replay, and does both', async () => {
    failing = true
    const user = await registerMessenger(stack)
    const worker = stack.service.webhookWorker!
    await worker.runOnce()
    for (let round = 0; round < 10; round += 1) {
      stack.service.clock.advance(60_000)
      await worker.runOnce()
    }
    const dead = await page('/console/events?state=dead')
    const row = await stack.service.db.kysely
      .selectFrom('webhook_events')
      .select('id')
      .where('type', '=', 'user.created')
      .where('user_id', '=', (await userRowOf(stack, user.openId)).id)
      .executeTakeFirstOrThrow()
    assert.ok(dead.includes(row.id), 'the dead event is listed')
    assert.ok(dead.includes(`action="/console/events/${row.id}/retry"`))
    assert.match(dead, /<button type="submit">Retry<\/button>/)

    failing = false
    // Retry and replay wake the service's own webhook worker, which may deliver before a page is
    // read: what proves each action is the event reaching the receiver again, under its own id.
    const deliveries = () => receiver.delivered().filter((event) => event.id === row.id).length
    const eventually = async (holds: () => Promise<boolean> | boolean, what: string) => {
      for (let round = 0; round < 200; round += 1) {
        if (await holds()) return
        await worker.runOnce()
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
      assert.fail(what)
    }
    assert.equal(
      await act(`/console/events/${row.id}/retry`),
      '/console/events?state=dead&done=retried',
    )
    await eventually(() => deliveries() === 1, 'the retried event is delivered')
    await eventually(
      async () =>
        (await page('/console/events?state=delivered')).includes(
          `action="/console/events/${row.id}/replay"`,
        ),
      'the delivered event is listed with Replay',
    )
    const delivered = await page('/console/events?state=delivered')
    assert.match(delivered, /<button type="submit">Replay<\/button>/)
    assert.equal(
      await act(`/console/events/${row.id}/replay`),
      '/console/events?state=delivered&done=replayed',
    )
    await eventually(() => deliveries() === 2, 'the replayed event is delivered again')
    const actions = (await auditOf('console-action')).map(
      (event) => JSON.parse(event.detail ?? '{}') as { action?: string; eventId?: string },
    )
    assert.deepEqual(
      actions.filter((detail) => detail.eventId === row.id).map((detail) => detail.action),
      ['event-replay', 'event-retry'],
    )
    await worker.runOnce()
  })

  it('lists pending mail and makes it due now with Retry', async () => {
    // The sink stays down: the tests after this one mail nobody.
    await stack.smtp.stop()
    {
      const user = await registerMessenger(stack)
      const asked = await call(url('/register/university'), {
        method: 'POST',
        headers: { authorization: user.sessionKey },
        json: { email: 'waiting@example.edu' },
      })
      assert.equal(asked.status, 200, asked.text)
      await stack.service.mailWorker.runOnce()
      const mail = await stack.service.db.kysely
        .selectFrom('mail_outbox')
        .select(['id', 'text_body'])
        .where('recipient', '=', 'waiting@example.edu')
        .executeTakeFirstOrThrow()
      const text = await page('/console/mail')
      assert.ok(text.includes(mail.id))
      assert.match(text, /w\*\*\*@example\.edu/, 'the address is masked')
      assert.ok(!text.includes('waiting@example.edu'))
      assert.equal(await act(`/console/mail/${mail.id}/retry`), '/console/mail?done=1')
      assert.match(await page('/console/mail?done=1'), /Mail made due now: 1/)
    }
  })

  it('filters the audit trail by user, type and time', async () => {
    const user = await registerMessenger(stack)
    const byUser = await page(`/console/audit?openId=${encodeURIComponent(user.openId)}`)
    assert.match(byUser, /<td>registration<\/td>/)
    assert.doesNotMatch(byUser, /<td>console-sign-in<\/td>/)
    const byType = await page('/console/audit?type=console-sign-in')
    assert.match(byType, /console:alice/)
    assert.doesNotMatch(byType, /<td>registration<\/td>/)
    const today = stack.service.clock.now().toISOString().slice(0, 10)
    assert.match(
      await page(`/console/audit?since=${today}&until=${today}`),
      /<td>registration<\/td>/,
    )
    assert.match(await page('/console/audit?until=2000-01-01'), /Nothing here/)
  })

  it('draws the overview from the database: users and links per day, sessions, tier-2 share, backlogs, readiness', async () => {
    const text = await page('/console')
    const users = await stack.service.db.kysely
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    const live = await stack.service.db.kysely
      .selectFrom('sessions')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('expires_at', '>', stack.service.clock.now().getTime())
      .executeTakeFirstOrThrow()
    assert.match(text, /<svg viewBox="0 0 300 90" role="img" aria-label="New users per day: (\d+)/)
    const drawn = /aria-label="New users per day: (\d+)/.exec(text)
    assert.equal(Number(drawn?.[1]), Number(users.n))
    assert.match(text, /aria-label="University links per day: [1-9]/)
    const active = await stack.service.db.kysely
      .selectFrom('user_active_days')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    assert.ok(Number(active.n) > 0, 'keys were used')
    assert.match(text, new RegExp(`aria-label="Active users per day: ${Number(active.n)} `))
    assert.match(text, new RegExp(`<p class="big">${Number(live.n)}</p>`))
    assert.match(text, /aria-label="Share of tier 2: \d+% \(\d+\/\d+\)"/)
    assert.match(text, /Webhook events/)
    assert.match(text, /Readiness<\/h2><p class="big-text good">ready/)
  })

  it('speaks Chinese when asked, as the other pages choose', async () => {
    const zh = await getPage(url('/console'), alice.cookie, { 'accept-language': 'zh-CN' })
    assert.match(zh.text, /<html lang="zh-CN">/)
    assert.match(zh.text, />概览</)
    assert.equal(zh.headers.get('vary'), 'Accept-Language')
    assert.match(await page('/console/users?lang=zh-CN'), /搜索用户/)
    const en = await page('/console')
    for (const label of ['Overview', 'Users', 'Events', 'Mail', 'Audit', 'Sign out']) {
      assert.ok(en.includes(`>${label}</`), label)
    }
  })
})
