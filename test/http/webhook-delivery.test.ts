import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { Webhook } from 'standardwebhooks'
import { runCli } from '../../src/cli/run.js'
import { call } from '../helpers/service.js'
import { logout, registerMessenger, startStack, type Stack } from '../helpers/stack.js'
import {
  newWebhookSecret,
  startWebhookReceiver,
  type Answer,
  type ReceivedRequest,
  type WebhookReceiver,
} from '../helpers/webhook-receiver.js'

const TRY_TIMEOUT_MS = 300

/**
 * docs/webhooks.md, "Delivery": two endpoints (each gets every event), two
 * secrets (rotation), receivers that fail in the ways endpoints do. The worker's rounds are run by
 * hand and its backoff is waited out on the TestClock.
 */
describe('webhook delivery: retries, order, endpoints, secrets', () => {
  let stack: Stack
  let primary: WebhookReceiver
  let secondary: WebhookReceiver
  const oldSecret = newWebhookSecret()
  const newSecret = newWebhookSecret()
  /** How the primary answers a user's (or a user's event type's) next requests; then 200. */
  const plan = new Map<string, Answer[]>()
  let env: Record<string, string>

  before(async () => {
    // The primary knows only the old secret, the secondary only the new one.
    primary = await startWebhookReceiver(oldSecret, { path: '/primary' })
    secondary = await startWebhookReceiver(newSecret, { path: '/secondary' })
    const planned = (request: ReceivedRequest): Answer => {
      const { type, data } = JSON.parse(request.body) as { type: string; data: { openId: string } }
      return (plan.get(`${data.openId}/${type}`) ?? plan.get(data.openId))?.shift() ?? 200
    }
    primary.answer = planned
    env = {
      WEBHOOK_URL: `${primary.url},${secondary.url}`,
      WEBHOOK_SECRET: `${oldSecret},${newSecret}`,
      WEBHOOK_RETRY_FOR: '1h',
    }
    stack = await startStack(env, {
      tweak: (config) => ({
        ...config,
        webhook: { ...config.webhook, tryTimeoutMs: TRY_TIMEOUT_MS },
      }),
    })
    // The command line stamps its changes with the real clock: both start on one timeline.
    stack.service.clock.advance(Date.now() - stack.service.clock.now().getTime())
  })
  after(async () => {
    await stack.close()
    await primary.close()
    await secondary.close()
  })

  const deliver = () => stack.service.webhookWorker!.runOnce()
  async function later(ms: number): Promise<void> {
    stack.service.clock.advance(ms)
    await deliver()
  }
  const newOpenId = () => `o-${randomBytes(9).toString('base64url')}`
  const requestsOf = (receiver: WebhookReceiver, openId: string) =>
    receiver.requests.filter((r) => r.body.includes(`"openId":"${openId}"`))
  const typesOf = (requests: ReceivedRequest[]) =>
    requests.map((r) => `${(JSON.parse(r.body) as { type: string }).type}:${r.answered}`)
  /** How many 2xx answers each event id got. */
  function successes(requests: ReceivedRequest[]): number[] {
    const counts = new Map<string, number>()
    for (const r of requests) {
      if (r.answered !== null && r.answered < 300) counts.set(r.id, (counts.get(r.id) ?? 0) + 1)
    }
    return [...counts.values()]
  }
  async function deliveryOf(openId: string, type: string, endpoint: string) {
    const events = await stack.service.db.kysely
      .selectFrom('webhook_events')
      .innerJoin('webhook_deliveries', 'webhook_deliveries.event_id', 'webhook_events.id')
      .selectAll('webhook_deliveries')
      .where('webhook_events.type', '=', type)
      .where('webhook_deliveries.endpoint', '=', endpoint)
      .where('webhook_events.body', 'like', `%"openId":"${openId}"%`)
      .execute()
    assert.equal(events.length, 1)
    return events[0]
  }
  async function cli(...args: string[]): Promise<{ code: number | null; out: string }> {
    let out = ''
    const code = await runCli(
      args,
      { DATABASE_URL: stack.service.config.database.url, LOG_LEVEL: 'warn', ...env },
      { out: (text) => (out += text), err: (text) => (out += text), interactive: false },
      'help',
    )
    return { code, out }
  }

  it('a 500 is tried again within 30 s with the same webhook-id, and succeeds once', async () => {
    const openId = newOpenId()
    plan.set(openId, [500])
    await registerMessenger(stack, openId)
    await deliver()
    // The session.started waits behind the failed user.created: one user's events stay in order.
    assert.deepEqual(typesOf(requestsOf(primary, openId)), ['user.created:500'])
    const failed = await deliveryOf(openId, 'user.created', primary.url)
    assert.equal(failed.state, 'pending')
    assert.equal(failed.attempts, 1)
    assert.equal(failed.last_error, 'HTTP 500')
    const wait = failed.next_attempt_at - stack.service.clock.now().getTime()
    assert.ok(wait > 0 && wait <= 30_000, `first retry in ${wait} ms`)
    await later(30_000)
    const requests = requestsOf(primary, openId)
    assert.deepEqual(typesOf(requests), [
      'user.created:500',
      'user.created:200',
      'session.started:200',
    ])
    assert.equal(requests[0].id, requests[1].id)
    assert.deepEqual(successes(requests), [1, 1])
    // The other endpoint got both at once, untouched by the primary's failure.
    assert.deepEqual(typesOf(requestsOf(secondary, openId)), [
      'user.created:200',
      'session.started:200',
    ])
  })

  it('a receiver that does not answer in time is abandoned and tried again', async () => {
    const openId = newOpenId()
    plan.set(openId, ['hang'])
    await registerMessenger(stack, openId)
    const started = Date.now()
    await deliver()
    assert.ok(Date.now() - started < TRY_TIMEOUT_MS + 2000)
    const hung = await deliveryOf(openId, 'user.created', primary.url)
    assert.equal(hung.state, 'pending')
    assert.match(hung.last_error ?? '', /no answer within 0\.3 s/)
    await later(30_000)
    const requests = requestsOf(primary, openId)
    assert.deepEqual(typesOf(requests), [
      'user.created:null',
      'user.created:200',
      'session.started:200',
    ])
    assert.deepEqual(successes(requests), [1, 1])
  })

  it('a receiver that is down and comes back gets every event once, in order', async () => {
    const openId = newOpenId()
    await primary.stop()
    await registerMessenger(stack, openId)
    await registerMessenger(stack, openId)
    await deliver()
    const down = await deliveryOf(openId, 'user.created', primary.url)
    assert.equal(down.state, 'pending')
    assert.match(down.last_error ?? '', /ECONNREFUSED/)
    await primary.start()
    await later(30_000)
    const requests = requestsOf(primary, openId)
    assert.deepEqual(typesOf(requests), [
      'user.created:200',
      'session.started:200',
      'session.started:200',
    ])
    assert.deepEqual(successes(requests), [1, 1, 1])
  })

  it("a user whose events keep failing holds up no other user's", async () => {
    const stuck = newOpenId()
    const other = newOpenId()
    plan.set(stuck, [500, 500, 500])
    await registerMessenger(stack, stuck)
    await registerMessenger(stack, other)
    await deliver()
    assert.deepEqual(typesOf(requestsOf(primary, stuck)), ['user.created:500'])
    assert.deepEqual(typesOf(requestsOf(primary, other)), [
      'user.created:200',
      'session.started:200',
    ])
    for (let round = 0; round < 5 && plan.get(stuck)!.length > 0; round += 1) {
      await later(10 * 60_000)
    }
    await later(10 * 60_000)
    assert.deepEqual(typesOf(requestsOf(primary, stuck)), [
      'user.created:500',
      'user.created:500',
      'user.created:500',
      'user.created:200',
      'session.started:200',
    ])
  })

  it('every endpoint gets every event, each signed by every secret (rotation)', async () => {
    const openId = newOpenId()
    await registerMessenger(stack, openId)
    await deliver()
    const first = requestsOf(primary, openId)
    const second = requestsOf(secondary, openId)
    assert.equal(first.length, 2)
    assert.deepEqual(
      first.map((r) => r.id),
      second.map((r) => r.id),
    )
    assert.deepEqual(
      [...first, ...second].map((r) => r.verified),
      [true, true, true, true],
    )
    for (const request of first) {
      // One signature per secret; a receiver that knows neither refuses the event.
      assert.equal(String(request.headers['webhook-signature']).split(' ').length, 2)
      assert.throws(() =>
        new Webhook(newWebhookSecret()).verify(
          request.body,
          request.headers as Record<string, string>,
        ),
      )
    }
  })

  it('after WEBHOOK_RETRY_FOR the event is dead, holds back nothing, and is retried and replayed by hand', async () => {
    const openId = newOpenId()
    plan.set(`${openId}/user.created`, Array<Answer>(100).fill(500))
    await registerMessenger(stack, openId)
    await deliver()
    for (let round = 0; round < 10; round += 1) {
      if ((await deliveryOf(openId, 'user.created', primary.url)).state === 'dead') break
      await later(20 * 60_000)
    }
    const dead = await deliveryOf(openId, 'user.created', primary.url)
    assert.equal(dead.state, 'dead')
    // The dead event no longer holds back the user's next one.
    await deliver()
    assert.deepEqual(typesOf(requestsOf(primary, openId)).slice(-1), ['session.started:200'])

    const metrics = await call(`${stack.service.url}/metrics`, { headers: { accept: '*/*' } })
    assert.match(metrics.text, /^campusgate_webhook_tries_total\{outcome="dead"\} 1$/m)
    assert.match(metrics.text, /^campusgate_webhook_tries_total\{outcome="failed"\} [1-9]\d*$/m)
    assert.match(metrics.text, /^campusgate_webhook_tries_total\{outcome="delivered"\} [1-9]\d*$/m)
    assert.match(metrics.text, /^campusgate_webhook_dead 1$/m)

    const listed = await cli('events', 'list', '--state', 'dead')
    assert.equal(listed.code, 0, listed.out)
    const lines = listed.out.trim().split('\n')
    assert.equal(lines.length, 1, listed.out)
    assert.match(
      lines[0],
      new RegExp(`^${dead.event_id}\\s+user\\.created\\s+dead\\s+tries ${dead.attempts + 1}\\b`),
    )

    plan.delete(`${openId}/user.created`)
    const retried = await cli('events', 'retry', dead.event_id)
    assert.equal(retried.code, 0, retried.out)
    assert.equal((await cli('events', 'retry', dead.event_id)).code, 3)
    await deliver()
    const again = requestsOf(primary, openId).filter((r) => r.id === dead.event_id)
    assert.deepEqual(successes(again), [1])
    assert.equal((await cli('events', 'list', '--state', 'dead')).out, '')

    // A replay sends a delivered event again, with the same id, to every endpoint.
    const replayed = await cli('events', 'replay', dead.event_id)
    assert.equal(replayed.code, 0, replayed.out)
    await deliver()
    assert.deepEqual(
      successes(requestsOf(primary, openId).filter((r) => r.id === dead.event_id)),
      [2],
    )
    assert.deepEqual(
      successes(requestsOf(secondary, openId).filter((r) => r.id === dead.event_id)),
      [2],
    )
    assert.equal((await cli('events', 'replay', 'evt_nosuchevent')).code, 3)
  })

  it('/metrics gives the age of the oldest undelivered event', async () => {
    await primary.stop()
    await registerMessenger(stack, newOpenId())
    await deliver()
    stack.service.clock.advance(90_000)
    const waiting = await call(`${stack.service.url}/metrics`, { headers: { accept: '*/*' } })
    const age = /^campusgate_webhook_oldest_pending_age_seconds (\S+)$/m.exec(waiting.text)
    assert.ok(age !== null && Number(age[1]) >= 90, waiting.text)
    assert.match(waiting.text, /^campusgate_webhook_pending [1-9]\d*$/m)
    await primary.start()
    await later(60 * 60_000)
    const drained = await call(`${stack.service.url}/metrics`, { headers: { accept: '*/*' } })
    assert.match(drained.text, /^campusgate_webhook_oldest_pending_age_seconds 0$/m)
    assert.match(drained.text, /^campusgate_webhook_pending 0$/m)
  })
})

/**
 * docs/webhooks.md, "Delivery": WEBHOOK_RETRY_FOR counts from a delivery's first try. An event
 * held back behind its user's earlier ones (per-user order) spends nothing of its window waiting.
 */
describe('webhook delivery: the retry window starts at the first try', () => {
  let stack: Stack
  let receiver: WebhookReceiver
  const secret = newWebhookSecret()

  before(async () => {
    receiver = await startWebhookReceiver(secret)
    receiver.answer = () => 500
    stack = await startStack({
      WEBHOOK_URL: receiver.url,
      WEBHOOK_SECRET: secret,
      // Short enough that the backoff (about 10 s, 40 s, 160 s ±25 %) makes exactly four tries
      // within it, and a fifth, its last, when it ends: the count does not depend on the jitter.
      WEBHOOK_RETRY_FOR: '5m',
    })
  })
  after(async () => {
    await stack.close()
    await receiver.close()
  })

  it("gives a user's third event, held back behind the first two, as many tries as the first", async () => {
    const { sessionKey, openId } = await registerMessenger(stack)
    await logout(stack, sessionKey)
    const db = stack.service.db.kysely
    const deliveries = () =>
      db
        .selectFrom('webhook_deliveries as d')
        .innerJoin('webhook_events as e', 'e.id', 'd.event_id')
        .select(['e.type', 'd.state', 'd.attempts', 'd.next_attempt_at'])
        .where('e.body', 'like', `%"openId":"${openId}"%`)
        .orderBy('d.seq')
        .execute()
    // Every try the worker makes, each exactly when it is due, until all three are dead.
    for (let round = 0; round < 100; round += 1) {
      await stack.service.webhookWorker!.runOnce()
      const pending = (await deliveries()).filter((d) => d.state === 'pending')
      if (pending.length === 0) break
      // The user's first pending event: the others wait behind it.
      const due = Number(pending[0].next_attempt_at)
      stack.service.clock.advance(Math.max(0, due - stack.service.clock.now().getTime()))
    }
    const settled = await deliveries()
    assert.deepEqual(
      settled.map((d) => [d.type, d.state, d.attempts]),
      [
        ['user.created', 'dead', 5],
        ['session.started', 'dead', 5],
        ['session.ended', 'dead', 5],
      ],
    )
    assert.equal(receiver.requests.length, 15)
  })
})
