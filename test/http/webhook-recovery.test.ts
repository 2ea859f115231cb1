import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { SANDBOX_APP } from '../../src/sandbox/messenger.js'
import { TestClock } from '../helpers/clock.js'
import { freshDatabase, type TestDatabase } from '../helpers/database.js'
import { spawnService, waitUntilServing } from '../helpers/process.js'
import { call, freePort, startService } from '../helpers/service.js'
import { registerMessenger, startStack, type Stack } from '../helpers/stack.js'
import {
  newWebhookSecret,
  startWebhookReceiver,
  type ReceivedRequest,
  type WebhookReceiver,
} from '../helpers/webhook-receiver.js'

const DATA_ENCRYPTION_KEY = Buffer.alloc(32, 9).toString('base64')

/** How many 2xx answers each event id got, by id. */
function successesById(requests: ReceivedRequest[]): Map<string, number> {
  const counts = new Map<string, number>()
  for (const r of requests) {
    if (r.answered !== null && r.answered < 300) counts.set(r.id, (counts.get(r.id) ?? 0) + 1)
  }
  return counts
}

const typeOf = (request: ReceivedRequest) => (JSON.parse(request.body) as { type: string }).type

/** docs/webhooks.md: "Nothing is lost across crashes or restarts"; "each try is made by exactly one". */
describe('webhook events across restarts, a SIGKILL and several instances', () => {
  const secret = newWebhookSecret()
  let receiver: WebhookReceiver
  let database: TestDatabase

  before(async () => {
    receiver = await startWebhookReceiver(secret)
  })
  after(() => receiver.close())

  it('events left undelivered by a stopped service are delivered by the next one', async () => {
    database = await freshDatabase()
    const env = {
      DATABASE_URL: database.url,
      DATA_ENCRYPTION_KEY,
      WEBHOOK_URL: receiver.url,
      WEBHOOK_SECRET: secret,
    }
    await receiver.stop()
    const first = await startStack(env)
    const user = await registerMessenger(first)
    await first.service.webhookWorker!.runOnce()
    await first.close()
    assert.equal(receiver.requests.length, 0)

    await receiver.start()
    const second = await startStack(env)
    try {
      second.service.clock.advance(60_000)
      await second.service.webhookWorker!.runOnce()
      const delivered = receiver.delivered().filter((e) => e.data.openId === user.openId)
      assert.deepEqual(
        delivered.map((e) => e.type),
        ['user.created', 'session.started'],
      )
      assert.deepEqual([...successesById(receiver.requests).values()], [1, 1])
    } finally {
      await second.close()
      await database.drop()
    }
  })

  it('a try cut short by SIGKILL is made again, with the same id, by the next process', async () => {
    receiver.requests.length = 0
    database = await freshDatabase()
    const env = {
      DATABASE_URL: database.url,
      DATA_ENCRYPTION_KEY,
      WEBHOOK_URL: receiver.url,
      WEBHOOK_SECRET: secret,
    }
    // The process's first try never gets an answer: it is in flight when the process dies.
    receiver.answer = () => 'hang'
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const run = spawnService({ ...env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' })
    try {
      await waitUntilServing(run, `${base}/healthz`)
      const minted = await fetch(`${base}/_sandbox/messenger/login-codes`, { method: 'POST' })
      const login = (await minted.json()) as { code: string; openId: string }
      const registered = await call(`${base}/register/messenger`, {
        method: 'POST',
        json: { ...SANDBOX_APP, code: login.code },
      })
      assert.equal(registered.status, 200, registered.text)
      const [inFlight] = await receiver.waitForRequests(1, 15_000)
      run.child.kill('SIGKILL')
      await run.exited
      assert.equal(typeOf(inFlight), 'user.created')
      assert.equal(inFlight.answered, null)

      receiver.answer = () => 200
      // The killed try holds its claim until its lock runs out; the next process's clock is past it.
      const next = await startService(env, { clock: new TestClock(Date.now() + 5 * 60_000) })
      try {
        await next.webhookWorker!.runOnce()
        const requests = receiver.requests
        assert.deepEqual(requests.map(typeOf), ['user.created', 'user.created', 'session.started'])
        assert.equal(requests[1].id, inFlight.id)
        assert.equal(requests[1].verified, true)
        assert.deepEqual([...successesById(requests).values()], [1, 1])
      } finally {
        await next.close()
      }
    } finally {
      if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL')
      await database.drop()
    }
  })

  describe('two instances on one database', () => {
    let a: Stack
    let b: Stack
    before(async () => {
      receiver.requests.length = 0
      database = await freshDatabase()
      const env = {
        DATABASE_URL: database.url,
        DATA_ENCRYPTION_KEY,
        WEBHOOK_URL: receiver.url,
        WEBHOOK_SECRET: secret,
      }
      a = await startStack(env)
      b = await startStack(env)
    })
    after(async () => {
      await a.close()
      await b.close()
      await database.drop()
    })

    it('each try is made by exactly one of them', async () => {
      // The first try of every event fails, so each is claimed twice; slow answers widen the races.
      const seen = new Set<string>()
      receiver.answer = (request) => {
        if (seen.has(request.id)) return 200
        seen.add(request.id)
        return 500
      }
      const users = []
      for (let i = 0; i < 10; i += 1) users.push(await registerMessenger(i % 2 === 0 ? a : b))
      const expected = users.length * 2
      for (let round = 0; round < 10 && receiver.delivered().length < expected; round += 1) {
        a.service.clock.advance(30_000)
        b.service.clock.advance(30_000)
        await Promise.all([
          a.service.webhookWorker!.runOnce(),
          b.service.webhookWorker!.runOnce(),
          a.service.webhookWorker!.runOnce(),
          b.service.webhookWorker!.runOnce(),
        ])
      }
      const byId = new Map<string, number>()
      for (const r of receiver.requests) byId.set(r.id, (byId.get(r.id) ?? 0) + 1)
      assert.equal(byId.size, expected)
      // One failed try and one delivered, per event: no try was made twice.
      assert.deepEqual(new Set(byId.values()), new Set([2]))
      assert.deepEqual(new Set(successesById(receiver.requests).values()), new Set([1]))
      const attempts = await a.service.db.kysely
        .selectFrom('webhook_deliveries')
        .select(['attempts', 'state'])
        .execute()
      assert.equal(attempts.length, expected)
      for (const row of attempts) assert.deepEqual(row, { attempts: 2, state: 'delivered' })
      // Each user's events arrived in order.
      for (const user of users) {
        const types = receiver
          .delivered()
          .filter((e) => e.data.openId === user.openId)
          .map((e) => e.type)
        assert.deepEqual(types, ['user.created', 'session.started'])
      }
    })
  })
})
