import assert from 'node:assert/strict'
import { personRowOrThrow } from '../helpers/people.js'
import { after, before, describe, it } from 'node:test'
import { createHash } from 'node:crypto'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { EVENT_TYPES } from '../../src/events/types.js'
import { runCli } from '../../src/cli/run.js'
import { SANDBOX_APP } from '../../src/sandbox/messenger.js'
import { cipherFor } from '../../src/secrets-at-rest.js'
import { call } from '../helpers/service.js'
import {
  CLIENT_SECRET,
  codeOf,
  decideAtProvider,
  followCallback,
  mintLoginCode,
  openLink,
  registerMessenger,
  requestConfirmationLink,
  registerUniversity,
  sessionOf,
  startStack,
  type Stack,
} from '../helpers/stack.js'
import {
  newWebhookSecret,
  startWebhookReceiver,
  type DeliveredEvent,
  type WebhookReceiver,
} from '../helpers/webhook-receiver.js'

const DAY = 86_400_000

/** docs/webhooks.md: each type fires after the action that causes it. */
describe('lifecycle events: each type after its action, signed, in order', () => {
  let stack: Stack
  let receiver: WebhookReceiver
  const secret = newWebhookSecret()

  before(async () => {
    receiver = await startWebhookReceiver(secret)
    stack = await startStack({
      WEBHOOK_URL: receiver.url,
      WEBHOOK_SECRET: secret,
      SESSION_TTL: '40d',
      UNIVERSITY_LINK_MAX_AGE: '10d',
      // Two devices at most, so that a third registration rotates.
      SESSIONS_PER_USER: '2',
    })
  })
  after(async () => {
    await stack.close()
    await receiver.close()
  })

  /** Delivers what is due and returns the user's events, in the order they arrived. */
  async function eventsOf(openId: string): Promise<DeliveredEvent[]> {
    await stack.service.webhookWorker!.runOnce()
    return receiver.delivered().filter((event) => event.data.openId === openId)
  }
  const kinds = (events: DeliveredEvent[]) =>
    events.map((event) =>
      event.data.reason === undefined ? event.type : `${event.type}:${event.data.reason}`,
    )

  it('registration: user.created, then session.started with the session and its expiry', async () => {
    const user = await registerMessenger(stack)
    const events = await eventsOf(user.openId)
    assert.deepEqual(kinds(events), ['user.created', 'session.started'])
    const [created, started] = events as [DeliveredEvent, DeliveredEvent]
    const session = await sessionOf(stack, user.sessionKey)
    assert.equal(typeof created.data.userId, 'string')
    assert.deepEqual(created.data, { userId: created.data.userId, openId: user.openId })
    assert.deepEqual(Object.keys(started.data).sort(), [
      'appId',
      'expiresAt',
      'openId',
      'platform',
      'sessionId',
      'userId',
    ])
    assert.equal(started.data.appId, 'wx-sandbox-app')
    assert.equal(started.data.platform, 'wechat')
    assert.equal(started.data.userId, created.data.userId)
    assert.equal(started.data.expiresAt, session.body.expiresAt)
    assert.equal(created.timestamp, stack.service.clock.now().toISOString())
    // Every request carried the Standard Webhooks headers and verified with the receiver's secret.
    const requests = receiver.requests.filter((r) => events.some((e) => e.id === r.id))
    assert.equal(requests.length, 2)
    for (const request of requests) {
      assert.equal(request.verified, true)
      assert.match(request.id, /^evt_[A-Za-z0-9_-]{22}$/)
      assert.match(String(request.headers['webhook-timestamp']), /^\d{10}$/)
      assert.match(String(request.headers['webhook-signature']), /^v1,[A-Za-z0-9+/=]+$/)
      assert.equal(request.headers['content-type'], 'application/json')
    }
    assert.notEqual(requests[0].id, requests[1].id)
  })

  it('a second device: session.started; past SESSIONS_PER_USER: session.ended (rotation) of the least recently used, then session.started', async () => {
    const user = await registerMessenger(stack)
    const first = await eventsOf(user.openId)
    // A second apart, so the first session is the least recently used, not tied with the second.
    stack.service.clock.advance(1000)
    await registerMessenger(stack, user.openId)
    stack.service.clock.advance(1000)
    await registerMessenger(stack, user.openId)
    const events = (await eventsOf(user.openId)).slice(first.length)
    assert.deepEqual(kinds(events), [
      'session.started',
      'session.ended:rotation',
      'session.started',
    ])
    assert.equal(events[1].data.sessionId, first[1].data.sessionId)
    assert.notEqual(events[2].data.sessionId, first[1].data.sessionId)
  })

  it('tier 2 through the sandbox: university.linked with the identity as GET /session shows it', async () => {
    const user = await registerUniversity(stack, 'linked@example.edu')
    const events = await eventsOf(user.openId)
    assert.deepEqual(kinds(events), ['user.created', 'session.started', 'university.linked'])
    const session = await sessionOf(stack, user.sessionKey)
    assert.equal(session.body.tier, 'university-registered')
    assert.deepEqual(events[2].data.university, session.body.university)
  })

  it('logout: session.ended (logout), then university.unlinked (logout)', async () => {
    const user = await registerUniversity(stack, 'logout@example.edu')
    const before = (await eventsOf(user.openId)).length
    const response = await call(`${stack.service.url}/logout`, {
      method: 'POST',
      headers: { authorization: user.sessionKey },
    })
    assert.equal(response.status, 200)
    const events = (await eventsOf(user.openId)).slice(before)
    assert.deepEqual(kinds(events), ['session.ended:logout', 'university.unlinked:logout'])
  })

  it('a tier-1 logout has no university.unlinked', async () => {
    const user = await registerMessenger(stack)
    await call(`${stack.service.url}/logout`, {
      method: 'POST',
      headers: { authorization: user.sessionKey },
    })
    assert.deepEqual(kinds((await eventsOf(user.openId)).slice(2)), ['session.ended:logout'])
  })

  it('the CLI revocation: session.ended (revoked), then university.unlinked (revoked)', async () => {
    const user = await registerUniversity(stack, 'revoked@example.edu')
    const before = (await eventsOf(user.openId)).length
    let out = ''
    const code = await runCli(
      ['sessions', 'revoke', user.openId],
      {
        DATABASE_URL: stack.service.config.database.url,
        WEBHOOK_URL: receiver.url,
        WEBHOOK_SECRET: secret,
        LOG_LEVEL: 'warn',
      },
      { out: (text) => (out += text), err: (text) => (out += text), interactive: false },
      'help',
    )
    assert.equal(code, 0, out)
    // The command wrote its events on the real clock: the service's clock is brought to it.
    stack.service.clock.advance(Math.max(0, Date.now() - stack.service.clock.now().getTime()))
    const events = (await eventsOf(user.openId)).slice(before)
    assert.deepEqual(kinds(events), ['session.ended:revoked', 'university.unlinked:revoked'])
  })

  it('suspension: session.ended (suspended), university.unlinked (suspended), user.suspended with the reason; then user.restored', async () => {
    const user = await registerUniversity(stack, 'suspended@example.edu')
    const before = (await eventsOf(user.openId)).length
    const origin = { actor: 'console:ada', ip: null }
    const { accounts } = stack.service
    assert.deepEqual(await accounts.suspend({ openId: user.openId, reason: 'spam', origin }), {
      ended: 1,
    })
    assert.equal(await accounts.restore({ openId: user.openId, origin }), 'restored')
    const events = (await eventsOf(user.openId)).slice(before)
    assert.deepEqual(kinds(events), [
      'session.ended:suspended',
      'university.unlinked:suspended',
      'user.suspended:spam',
      'user.restored',
    ])
    // Neither the second suspension of nobody suspended nor a restoration of nobody is an event.
    assert.equal(await accounts.restore({ openId: user.openId, origin }), 'not-suspended')
    assert.equal((await eventsOf(user.openId)).length, before + 4)
  })

  it('erasure: session.ended, university.unlinked, then user.erased', async () => {
    const user = await registerUniversity(stack, 'erased@example.edu')
    const before = await eventsOf(user.openId)
    const response = await call(`${stack.service.url}/user`, {
      method: 'DELETE',
      headers: { authorization: user.sessionKey },
    })
    assert.equal(response.status, 200)
    const events = (await eventsOf(user.openId)).slice(before.length)
    assert.deepEqual(kinds(events), [
      'session.ended:erasure',
      'university.unlinked:erasure',
      'user.erased',
    ])
    assert.equal(events[0].data.sessionId, before[1].data.sessionId)
    for (const event of events) assert.equal(event.data.userId, before[0].data.userId)
  })

  it('a link past UNIVERSITY_LINK_MAX_AGE: university.unlinked (lapsed) when the pruner finds it', async () => {
    const user = await registerUniversity(stack, 'lapsed@example.edu')
    const before = (await eventsOf(user.openId)).length
    stack.service.clock.advance(10 * DAY + 1000)
    assert.equal((await sessionOf(stack, user.sessionKey)).body.tier, 'messenger-registered')
    await stack.service.pruner.runOnce()
    const events = (await eventsOf(user.openId)).slice(before)
    assert.deepEqual(kinds(events), ['university.unlinked:lapsed'])
    // The session lives on; its logout then has nothing to unlink.
    await call(`${stack.service.url}/logout`, {
      method: 'POST',
      headers: { authorization: user.sessionKey },
    })
    assert.deepEqual(kinds((await eventsOf(user.openId)).slice(before + 1)), [
      'session.ended:logout',
    ])
  })

  it('expiry: session.ended (expiry), then university.unlinked (expiry)', async () => {
    const user = await registerUniversity(stack, 'expiry@example.edu')
    const before = (await eventsOf(user.openId)).length
    stack.service.clock.advance(40 * DAY + 1000)
    // Presented after its expiry, the key is ended exactly as by logout.
    assert.equal((await sessionOf(stack, user.sessionKey)).status, 401)
    const events = (await eventsOf(user.openId)).slice(before)
    // The link lapsed (10 days) before the session expired (40 days) unless the pruner ran;
    // either way the link's end is announced once.
    assert.equal(events[0].type, 'session.ended')
    assert.equal(events[0].data.reason, 'expiry')
    assert.deepEqual(kinds(events), ['session.ended:expiry', 'university.unlinked:expiry'])
  })

  it('no byte delivered in a full flow carries a secret or the confirmation email', async () => {
    const url = stack.service.url
    const { cipher } = cipherFor(stack.service.config)
    const secrets: string[] = [SANDBOX_APP.appSecret, CLIENT_SECRET, secret]
    const login = await mintLoginCode(stack)
    const register = async (code: string) => {
      const answer = await call(`${url}/register/messenger`, {
        method: 'POST',
        json: { appId: SANDBOX_APP.appId, appSecret: SANDBOX_APP.appSecret, code },
      })
      assert.equal(answer.status, 200, answer.text)
      return answer.body.sessionKey as string
    }
    const sessionKey = await register(login.code)
    const user = await personRowOrThrow(stack.service.db.kysely, login.openId)
    secrets.push(login.code, sessionKey, cipher.decrypt(user.messenger_session_key!))

    const email = 'no-secrets-typed@example.edu'
    const link = await requestConfirmationLink(stack, sessionKey, email)
    const mail = stack.smtp.messages.find((m) => JSON.stringify(m.to).includes(email))!
    secrets.push(link, codeOf(link), email)
    const opened = await openLink(link)
    secrets.push(opened.cookie.slice(opened.cookie.indexOf('=') + 1))
    const callback = await decideAtProvider(stack, login.openId, 'allow')
    secrets.push(new URL(callback).searchParams.get('code')!)
    assert.equal((await followCallback(callback, opened.cookie)).status, 200)
    const linked = await personRowOrThrow(stack.service.db.kysely, login.openId)
    secrets.push(cipher.decrypt(linked.university_token!))

    const again = await mintLoginCode(stack, login.openId)
    const rotated = await register(again.code)
    secrets.push(again.code, rotated)
    await call(`${url}/logout`, { method: 'POST', headers: { authorization: rotated } })
    const last = await mintLoginCode(stack, login.openId)
    const lastKey = await register(last.code)
    secrets.push(last.code, lastKey)
    await call(`${url}/user`, { method: 'DELETE', headers: { authorization: lastKey } })

    const kinds = (await eventsOf(login.openId)).map((e) => e.type)
    // The second device's logout leaves the first: only the erasure ends the user's last session.
    assert.deepEqual(kinds, [
      'user.created',
      'session.started',
      'university.linked',
      'session.started',
      'session.ended',
      'session.started',
      'session.ended',
      'session.ended',
      'university.unlinked',
      'user.erased',
    ])
    // Every byte every receiver got in this file: request heads and bodies.
    const bytes = receiver.requests.map((r) => `${JSON.stringify(r.headers)}\n${r.body}`).join('\n')
    assert.ok(bytes.includes(login.openId))
    const mailText = typeof mail.text === 'string' ? mail.text : ''
    for (const line of mailText.split('\n').filter((l) => l.trim().length >= 24)) {
      assert.ok(!bytes.includes(line.trim()), `a line of the confirmation email was sent: ${line}`)
    }
    for (const value of secrets) {
      assert.ok(value.length >= 16, `a weak stand-in for a secret: ${value.slice(0, 4)}…`)
      const digest = createHash('sha256').update(value).digest()
      for (const form of [
        value,
        encodeURIComponent(value),
        digest.toString('hex'),
        digest.toString('base64url'),
      ]) {
        assert.ok(!bytes.includes(form), `a secret was delivered: ${value.slice(0, 6)}…`)
      }
    }
  })

  it('the OpenAPI document describes every type under webhooks; every delivered event fits it', async () => {
    const document = (await call(`${stack.service.url}/openapi.json`)).body as {
      openapi: string
      webhooks: Record<
        string,
        { post: { requestBody: { content: Record<string, { schema: object }> } } }
      >
    }
    assert.equal(document.openapi, '3.1.0')
    assert.deepEqual(Object.keys(document.webhooks).sort(), [...EVENT_TYPES].sort())
    const ajv = new Ajv2020({ strict: false })
    addFormats.default(ajv)
    const delivered = receiver.delivered()
    assert.deepEqual(new Set(delivered.map((event) => event.type)), new Set(EVENT_TYPES))
    for (const { type, timestamp, data } of delivered) {
      const event = { type, timestamp, data }
      const schema =
        document.webhooks[event.type].post.requestBody.content['application/json'].schema
      assert.ok(ajv.validate(schema, event), `${event.type}: ${ajv.errorsText()}`)
    }
  })
})
