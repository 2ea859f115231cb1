import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { fromConsole, getPage, signIn, TEST_KEY, type SignedIn } from '../helpers/console.js'
import { registerMessenger, startStack, userRowOf, type Stack } from '../helpers/stack.js'
import {
  newWebhookSecret,
  startWebhookReceiver,
  type WebhookReceiver,
} from '../helpers/webhook-receiver.js'

/**
 * docs/console.md, "What each page shows": with one endpoint working and one failing, each event shows its user
 * and each endpoint's state and last error; Retry, Replay and an endpoint's "Retry all".
 */
describe('the operator console: lifecycle events per endpoint', () => {
  let stack: Stack
  let working: WebhookReceiver
  let failing: WebhookReceiver
  let alice: SignedIn
  let broken = true

  before(async () => {
    const secret = newWebhookSecret()
    working = await startWebhookReceiver(secret, { path: '/hooks/working' })
    failing = await startWebhookReceiver(secret, { path: '/hooks/failing' })
    failing.answer = () => (broken ? 500 : 200)
    stack = await startStack({
      DATA_ENCRYPTION_KEY: TEST_KEY,
      // A query string may hold a token: no page repeats it.
      WEBHOOK_URL: `${working.url},${failing.url}?token=hook-secret-123`,
      WEBHOOK_SECRET: secret,
      WEBHOOK_RETRY_FOR: '2m',
    })
    stack.service.clock.advance(Date.now() - stack.service.clock.now().getTime())
    // 26 users: 52 events, past one page, each delivered to one endpoint and dead at the other.
    for (let index = 0; index < 26; index += 1) await registerMessenger(stack)
    const worker = stack.service.webhookWorker!
    await worker.runOnce()
    for (let round = 0; round < 10; round += 1) {
      stack.service.clock.advance(30_000)
      await worker.runOnce()
    }
    const link = await stack.service.consoleSessions.createLink('alice', 'admin', {
      actor: 'cli:test',
      ip: null,
    })
    alice = await signIn(stack.service, link.token)
  })
  after(async () => {
    await stack.close()
    await working.close()
    await failing.close()
  })

  const page = async (path: string) => {
    const answer = await getPage(`${stack.service.url}${path}`, alice.cookie)
    assert.equal(answer.status, 200, `${path}: ${answer.text}`)
    return answer.text
  }
  const act = async (path: string, fields: Record<string, string> = {}) => {
    const answer = await fromConsole(stack.service, alice, path, fields)
    assert.equal(answer.status, 303, answer.text)
    return answer.headers.get('location') ?? ''
  }
  const keyOf = (html: string, label: string) => {
    const match = new RegExp(
      `<option value="([0-9a-f]{16})"[^>]*>${label.replace(/[.?]/g, '\\$&')}</option>`,
    ).exec(html)
    assert.ok(match, `the endpoint ${label} is offered`)
    return match[1]
  }

  it('shows each event with its user and, per endpoint, its state and last error, 50 a page', async () => {
    const dead = await page('/console/events?state=dead')
    assert.match(dead, /1–50 of 52/)
    const failingLabel = new URL(failing.url).origin + '/hooks/failing'
    const workingLabel = new URL(working.url).origin + '/hooks/working'
    assert.ok(dead.includes(`<code>${failingLabel}</code>: <span class="state-dead">Dead</span>`))
    assert.ok(
      dead.includes(`<code>${workingLabel}</code>: <span class="state-delivered">Delivered</span>`),
    )
    assert.ok(!dead.includes('hook-secret-123'), 'the query string of an endpoint is never shown')
    assert.match(dead, /HTTP 500/, 'the last error')
    assert.match(dead, /<td data-label="User"><a href="\/console\/users\/sandbox-/)
    assert.match(dead, /<button type="submit">Retry<\/button>/)
    assert.match(dead, /<button type="submit">Replay<\/button>/)
    assert.match(dead, /rel="next">Next</)
    const second = await page('/console/events?state=dead&page=2')
    assert.match(second, /51–52 of 52/)
    assert.match(second, /rel="prev">Previous</)
    // By endpoint: nothing is dead at the working one.
    const key = keyOf(dead, workingLabel)
    assert.match(await page(`/console/events?state=dead&endpoint=${key}`), /Nothing here/)
    assert.match(await page(`/console/events?state=delivered&endpoint=${key}`), /1–50 of 52/)
    // The overview says what its dead figure counts, per endpoint.
    const overview = await page('/console')
    assert.match(overview, /A delivery is one event sent to one endpoint/)
    assert.ok(overview.includes(`<td data-label="dead"><span class="bad">52</span></td>`))
  })

  it('retries one dead delivery, replays one delivered, at its own endpoint, audited', async () => {
    const user = await registerMessenger(stack)
    const userId = (await userRowOf(stack, user.openId)).id
    const worker = stack.service.webhookWorker!
    await worker.runOnce()
    for (let round = 0; round < 10; round += 1) {
      stack.service.clock.advance(30_000)
      await worker.runOnce()
    }
    const event = await stack.service.db.kysely
      .selectFrom('webhook_events')
      .select('id')
      .where('user_id', '=', userId)
      .where('type', '=', 'user.created')
      .executeTakeFirstOrThrow()
    const html = await page(`/console/users/${encodeURIComponent(user.openId)}`)
    assert.ok(html.includes(event.id), "the event is on the user's page")
    const failingKey = keyOf(
      await page('/console/events'),
      new URL(failing.url).origin + '/hooks/failing',
    )
    const workingKey = keyOf(
      await page('/console/events'),
      new URL(working.url).origin + '/hooks/working',
    )
    const before = working.requests.length
    assert.equal(
      await act(`/console/events/${event.id}/replay`, { endpoint: workingKey }),
      '/console/events?state=delivered&done=replayed&count=1',
    )
    assert.equal(
      await act(`/console/events/${event.id}/retry`, { endpoint: failingKey }),
      '/console/events?state=dead&done=retried&count=1',
    )
    await worker.runOnce()
    assert.ok(working.requests.length > before, 'the replay reached the working endpoint')
    const states = await stack.service.db.kysely
      .selectFrom('webhook_deliveries')
      .select(['endpoint', 'state'])
      .where('event_id', '=', event.id)
      .execute()
    assert.ok(states.every((row) => row.state !== 'dead' || row.endpoint.includes('failing')))
    const actions = await stack.service.db.kysely
      .selectFrom('audit_events')
      .select('detail')
      .where('type', '=', 'console-action')
      .where('actor', '=', 'console:alice')
      .execute()
    const details = actions.map(
      (row) => JSON.parse(row.detail ?? '{}') as { action: string; eventId?: string },
    )
    assert.ok(details.some((d) => d.action === 'event-retry' && d.eventId === event.id))
    assert.ok(details.some((d) => d.action === 'event-replay' && d.eventId === event.id))
  })

  it('retries every dead delivery of an endpoint at once with "Retry all"', async () => {
    const dead = await page('/console/events?state=dead')
    assert.match(dead, /dead deliveries to http:\/\/127\.0\.0\.1:\d+\/hooks\/failing/)
    assert.match(dead, /<button type="submit">Retry all<\/button>/)
    const key = keyOf(dead, new URL(failing.url).origin + '/hooks/failing')
    broken = false
    // Back to the view it came from (state, endpoint, page, language), saying how many changed.
    const deadBefore = await stack.service.db.kysely
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('state', '=', 'dead')
      .executeTakeFirstOrThrow()
    const view = `/console/events?state=dead&endpoint=${key}&page=2&lang=zh-CN`
    assert.equal(
      await act('/console/events/retry-all?lang=zh-CN', { endpoint: key, back: view }),
      `${view}&done=retriedAll&count=${Number(deadBefore.n)}`,
    )
    const left = await stack.service.db.kysely
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('state', '=', 'dead')
      .executeTakeFirstOrThrow()
    assert.equal(Number(left.n), 0)
    const worker = stack.service.webhookWorker!
    for (let round = 0; round < 20 && (await worker.runOnce()) > 0; round += 1);
    assert.match(await page('/console/events?state=dead'), /Nothing here/)
    assert.equal(
      await act('/console/events/retry-all', { endpoint: key }),
      `/console/events?state=dead&endpoint=${key}&done=nothing&count=0`,
    )
  })
})
