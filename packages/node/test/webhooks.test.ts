import assert from 'node:assert/strict'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import express from 'express'
import { createClient, type Client, type WebhookEvent } from 'campusgate-node'
import { keepRawBody, webhookHandler } from 'campusgate-node/express'
import { BACKENDS, type Backend } from './apps.js'
import { deliver, newSecret, signedEvent } from './events.js'

describe('campusgate-node webhookHandler', () => {
  const secret = newSecret()
  const rotated = newSecret()
  let client: Client
  const backends: Backend[] = []
  const received: WebhookEvent[] = []

  before(async () => {
    // No campusgate needed to verify a signature; the client only holds the (unused) cache.
    client = createClient({ baseUrl: 'http://127.0.0.1:9', cache: { ttlMs: 1000, max: 10 } })
    for (const start of BACKENDS) {
      backends.push(
        await start(client, {
          secret: [secret, rotated],
          on: {
            'user.erased': (event) => void received.push(event),
            'session.started': () => {
              throw new Error('the backend failed to handle it')
            },
          },
        }),
      )
    }
  })
  after(async () => {
    for (const backend of backends) await backend.close()
    await client.close()
  })

  const data = { userId: 'user-1', openId: 'open-1' }

  it('calls on[type] with the verified event, under either secret while rotating', async () => {
    for (const backend of backends) {
      received.length = 0
      const url = `${backend.url}/campusgate/events`
      for (const key of [secret, rotated]) {
        const answer = await deliver(url, signedEvent(key, 'user.erased', data))
        assert.equal(answer.status, 200, backend.name)
      }
      assert.equal(received.length, 2)
      assert.equal(received[0].type, 'user.erased')
      assert.deepEqual(received[0].data, data)
      assert.match(received[0].timestamp, /^\d{4}-\d\d-\d\dT/)
      // A type with no handler is acknowledged.
      assert.equal((await deliver(url, signedEvent(secret, 'user.created', data))).status, 200)
    }
  })

  it('answers 4xx to a bad, missing or stale signature and to a changed body, and calls nothing', async () => {
    for (const backend of backends) {
      received.length = 0
      const url = `${backend.url}/campusgate/events`
      const wrongSecret = signedEvent(newSecret(), 'user.erased', data)
      const changed = signedEvent(secret, 'user.erased', data)
      changed.body = changed.body.replace('open-1', 'open-2')
      const stale = signedEvent(secret, 'user.erased', data, new Date(Date.now() - 10 * 60_000))
      const unsigned = signedEvent(secret, 'user.erased', data)
      delete unsigned.headers['webhook-signature']
      for (const [what, event] of [
        ['another secret', wrongSecret],
        ['a changed body', changed],
        ['a timestamp ten minutes old', stale],
        ['no signature', unsigned],
      ] as const) {
        const answer = await deliver(url, event)
        assert.ok(
          answer.status >= 400 && answer.status < 500,
          `${backend.name}, ${what}: ${answer.status}`,
        )
      }
      assert.equal(received.length, 0)
    }
  })

  it('answers 500 when the handler throws, so campusgate delivers again', async () => {
    for (const backend of backends) {
      const answer = await deliver(
        `${backend.url}/campusgate/events`,
        signedEvent(secret, 'session.started', data),
      )
      assert.equal(answer.status, 500, backend.name)
    }
  })
})

describe('campusgate-node webhookHandler behind a global express.json()', () => {
  const secret = newSecret()
  const data = { userId: 'user-1', openId: 'open-1' }

  async function startBehind(parser: express.RequestHandler) {
    const received: WebhookEvent[] = []
    const app = express()
    app.use(parser)
    app.post(
      '/campusgate/events',
      webhookHandler({ secret, on: { 'user.erased': (event) => void received.push(event) } }),
    )
    const server = app.listen(0, '127.0.0.1')
    await once(server, 'listening')
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/campusgate/events`,
      received,
      close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    }
  }

  for (const [what, parser] of [
    [
      'the raw body saved by express.json({ verify })',
      express.json({
        verify: (req, _res, buf) => {
          ;(req as typeof req & { rawBody?: Buffer }).rawBody = buf
        },
      }),
    ],
    ['keepRawBody as the verify', express.json({ verify: keepRawBody })],
  ] as const) {
    it(`verifies and handles events with ${what}`, async () => {
      const app = await startBehind(parser)
      try {
        const answer = await deliver(app.url, signedEvent(secret, 'user.erased', data))
        assert.deepEqual(answer, { status: 200, body: {} })
        assert.deepEqual(app.received[0]?.data, data)
        const changed = signedEvent(secret, 'user.erased', data)
        // The same JSON with other spacing: the signature is over the bytes, not the value.
        changed.body = JSON.stringify(JSON.parse(changed.body), null, 2)
        assert.equal((await deliver(app.url, changed)).status, 401)
      } finally {
        await app.close()
      }
    })
  }

  it('answers 500 saying how to fix it when the parser left no raw body', async () => {
    const app = await startBehind(express.json())
    try {
      const answer = await deliver(app.url, signedEvent(secret, 'user.erased', data))
      assert.equal(answer.status, 500)
      const { error } = answer.body as { error: string }
      assert.match(error, /mount the route before express\.json\(\)/)
      assert.match(
        error,
        /express\.json\(\{ verify: \(req, res, buf\) => \{ req\.rawBody = buf \} \}\)/,
      )
      assert.equal(app.received.length, 0)
    } finally {
      await app.close()
    }
  })
})
