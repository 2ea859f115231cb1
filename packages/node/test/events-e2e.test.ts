import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { createClient, type Client } from 'campusgate-node'
import { call, freePort, startService, type RunningService } from '../../../test/helpers/service.js'
import { registerUser, startExpress, type Backend } from './apps.js'
import { newSecret } from './events.js'

describe('campusgate-node and the events campusgate sends', () => {
  let service: RunningService
  let client: Client
  let backend: Backend
  const received: string[] = []
  const suspended: { openId: string; reason: string | null }[] = []

  before(async () => {
    const secret = newSecret()
    const port = await freePort()
    client = createClient({
      baseUrl: `http://127.0.0.1:${port}`,
      cache: { ttlMs: 60_000, max: 100 },
    })
    backend = await startExpress(client, {
      secret,
      on: {
        'session.ended': (event) => void received.push(event.data.openId),
        'user.suspended': (event) =>
          void suspended.push({ openId: event.data.openId, reason: event.data.reason }),
      },
    })
    service = await startService({
      PORT: String(port),
      WEBHOOK_URL: `${backend.url}/campusgate/events`,
      WEBHOOK_SECRET: secret,
    })
  })
  after(async () => {
    await service.close()
    await backend.close()
    await client.close()
  })

  it("drops a user's cached key when campusgate's own session.ended arrives", async () => {
    const user = await registerUser(service)
    const profile = () => call(`${backend.url}/profile`, { headers: { authorization: user.key } })
    assert.equal((await profile()).status, 200)
    await call(`${service.url}/logout`, { method: 'POST', headers: { authorization: user.key } })
    const deadline = Date.now() + 15_000
    while (!received.includes(user.openId) && Date.now() < deadline) await sleep(100)
    assert.ok(received.includes(user.openId), 'session.ended delivered')
    assert.equal((await profile()).status, 401)
  })

  it("refuses a suspended person's cached key once user.suspended arrives, as an ended one", async () => {
    const user = await registerUser(service)
    const profile = () => call(`${backend.url}/profile`, { headers: { authorization: user.key } })
    assert.equal((await profile()).status, 200)
    const done = await service.accounts.suspend({
      openId: user.openId,
      reason: 'spam',
      origin: { actor: 'cli:test', ip: null },
    })
    assert.deepEqual(done, { ended: 1 })
    const deadline = Date.now() + 15_000
    while (!suspended.some((one) => one.openId === user.openId) && Date.now() < deadline) {
      await sleep(100)
    }
    assert.deepEqual(
      suspended.filter((one) => one.openId === user.openId),
      [{ openId: user.openId, reason: 'spam' }],
    )
    const refused = await profile()
    assert.equal(refused.status, 401)
    assert.deepEqual(refused.body, { error: '@unauthorized/invalid-session-key' })
  })
})
