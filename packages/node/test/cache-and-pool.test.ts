import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { createClient, EVENT_TYPES } from 'campusgate-node'
import { call, startService, type RunningService } from '../../../test/helpers/service.js'
import { BACKENDS, registerUser } from './apps.js'
import { deliver, newSecret, signedEvent } from './events.js'

describe('campusgate-node: one pool, and the cache', () => {
  let service: RunningService
  let connections = 0
  let sessionChecks = 0

  before(async () => {
    service = await startService(
      {},
      {
        extend: (app) =>
          app.addHook('onRequest', async (request) => {
            if (request.url === '/session') sessionChecks += 1
          }),
      },
    )
    service.app.server.on('connection', () => (connections += 1))
  })
  after(() => service.close())

  const profile = (url: string, key: string) =>
    call(`${url}/profile`, { headers: { authorization: key } })

  for (const start of BACKENDS) {
    it(`${start.name.replace('start', '')}: checks keys over one kept-alive pool, not a connection per check`, async () => {
      const client = createClient({ baseUrl: service.url })
      const backend = await start(client)
      try {
        const { key } = await registerUser(service)
        const [connectionsBefore, checksBefore] = [connections, sessionChecks]
        for (let i = 0; i < 30; i += 1) assert.equal((await profile(backend.url, key)).status, 200)
        assert.equal(connections - connectionsBefore, 1, 'thirty checks in a row, one connection')
        assert.equal(sessionChecks - checksBefore, 30, 'no cache by default: each check asks')

        const burst = await Promise.all(Array.from({ length: 10 }, () => profile(backend.url, key)))
        assert.ok(burst.every((response) => response.status === 200))
        const afterBurst = connections
        assert.ok(afterBurst - connectionsBefore <= 10)
        for (let i = 0; i < 20; i += 1) assert.equal((await profile(backend.url, key)).status, 200)
        assert.equal(connections, afterBurst, 'the burst’s connections are kept and reused')
      } finally {
        await backend.close()
        await client.close()
      }
    })

    it(`${start.name.replace('start', '')}: without a cache a logout is seen at the next check`, async () => {
      const client = createClient({ baseUrl: service.url })
      const backend = await start(client)
      try {
        const { key } = await registerUser(service)
        assert.equal((await profile(backend.url, key)).status, 200)
        const logout = await call(`${service.url}/logout`, {
          method: 'POST',
          headers: { authorization: key },
        })
        assert.equal(logout.status, 200)
        const next = await profile(backend.url, key)
        assert.equal(next.status, 401)
        assert.deepEqual(next.body, { error: '@unauthorized/invalid-session-key' })
      } finally {
        await backend.close()
        await client.close()
      }
    })

    it(`${start.name.replace('start', '')}: a cache is dropped for a user on every event of that user (issue 47)`, async () => {
      const secret = newSecret()
      const client = createClient({ baseUrl: service.url, cache: { ttlMs: 60_000, max: 100 } })
      const received: string[] = []
      const backend = await start(client, {
        secret,
        on: {
          'session.ended': (event) => void received.push(`${event.type} ${event.data.openId}`),
        },
      })
      const events = `${backend.url}/campusgate/events`
      try {
        for (const type of EVENT_TYPES) {
          const user = await registerUser(service)
          const other = await registerUser(service)
          const checksBefore = sessionChecks
          for (let i = 0; i < 5; i += 1) {
            assert.equal((await profile(backend.url, user.key)).status, 200)
            assert.equal((await profile(backend.url, other.key)).status, 200)
          }
          assert.equal(sessionChecks - checksBefore, 2, 'one check per key, then the cache')
          await call(`${service.url}/logout`, {
            method: 'POST',
            headers: { authorization: user.key },
          })
          // The cache still believes the key: that is what a cache is, and why it is off by default.
          assert.equal((await profile(backend.url, user.key)).status, 200)

          // An event of another user drops nothing of this one's.
          const others = signedEvent(secret, type, { userId: 'o', openId: `not-${user.openId}` })
          assert.equal((await deliver(events, others)).status, 200)
          assert.equal((await profile(backend.url, user.key)).status, 200)

          // Any event of the user, university.linked and user.created included, drops its keys.
          const dropping = signedEvent(secret, type, {
            userId: 'u',
            openId: user.openId,
            reason: 'logout',
          })
          assert.deepEqual(await deliver(events, dropping), { status: 200, body: {} })
          assert.equal((await profile(backend.url, user.key)).status, 401, type)
          // Only that user's keys were dropped.
          const checks = sessionChecks
          assert.equal((await profile(backend.url, other.key)).status, 200)
          assert.equal(sessionChecks, checks)
        }
        assert.deepEqual(
          received.map((line) => line.split(' ')[0]),
          ['session.ended', 'session.ended'],
        )
      } finally {
        await backend.close()
        await client.close()
      }
    })
  }

  it('keeps at most `max` keys and believes one at most `ttlMs`', async () => {
    const client = createClient({ baseUrl: service.url, cache: { ttlMs: 300, max: 2 } })
    try {
      const [a, b, c] = [
        await registerUser(service),
        await registerUser(service),
        await registerUser(service),
      ]
      const asks = async (key: string): Promise<number> => {
        const before = sessionChecks
        assert.notEqual(await client.session(key), null)
        return sessionChecks - before
      }
      assert.equal(await asks(a.key), 1)
      assert.equal(await asks(b.key), 1)
      assert.equal(await asks(a.key), 0)
      assert.equal(await asks(c.key), 1) // b, least recently used, goes
      assert.equal(await asks(a.key), 0)
      assert.equal(await asks(b.key), 1)
      await sleep(400)
      assert.equal(await asks(b.key), 1)
      assert.equal(await client.session('unknown-key-0123456789'), null)
      assert.throws(() => createClient({ baseUrl: service.url, cache: { ttlMs: 0, max: 1 } }))
    } finally {
      await client.close()
    }
  })
})
