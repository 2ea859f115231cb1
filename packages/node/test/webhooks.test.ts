import assert from 'node:assert/strict'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import express from 'express'
import {
  createClient,
  memorySeenStore,
  type Client,
  type WebhookEvent,
  type WebhookRefusedError,
} from 'campusgate-node'
import { keepRawBody, webhookHandler } from 'campusgate-node/express'
import { BACKENDS, type Backend } from './apps.js'
import { deliver, newSecret, signedEvent } from './events.js'

describe('campusgate-node webhookHandler', () => {
  const secret = newSecret()
  const rotated = newSecret()
  let client: Client
  const backends: Backend[] = []
  const received: WebhookEvent[] = []
  const refused: WebhookRefusedError[] = []
  /** session.started fails this many more times before it is handled. */
  let failures = 0

  before(async () => {
    // No campusgate needed to verify a signature; the client only holds the (unused) cache.
    client = createClient({ baseUrl: 'http://127.0.0.1:9', cache: { ttlMs: 1000, max: 10 } })
    for (const start of BACKENDS) {
      backends.push(
        await start(client, {
          secret: [secret, rotated],
          on: {
            'user.erased': (event) => void received.push(event),
            'session.started': (event) => {
              if (failures > 0) {
                failures -= 1
                throw new Error('the backend failed to handle it')
              }
              received.push(event)
            },
          },
          onError: (refusal) => void refused.push(refusal),
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
      assert.match(received[0].id, /^msg_/)
      assert.notEqual(received[0].id, received[1].id)
      assert.deepEqual(received[0].data, data)
      assert.match(received[0].timestamp, /^\d{4}-\d\d-\d\dT/)
      // A type with no handler is acknowledged.
      assert.equal((await deliver(url, signedEvent(secret, 'user.created', data))).status, 200)
    }
  })

  it('hands over the webhook-id, and acknowledges a duplicate without calling again (issue 47)', async () => {
    for (const backend of backends) {
      received.length = 0
      const url = `${backend.url}/campusgate/events`
      const event = signedEvent(secret, 'user.erased', data)
      for (let i = 0; i < 3; i += 1) {
        assert.deepEqual(await deliver(url, event), { status: 200, body: {} }, backend.name)
      }
      assert.equal(received.length, 1, `${backend.name}: one call for three deliveries`)
      assert.equal(received[0].id, event.headers['webhook-id'])
      // The same id signed again later (campusgate's next try of the event) is a duplicate too.
      const again = signedEvent(
        secret,
        'user.erased',
        data,
        new Date(),
        event.headers['webhook-id'],
      )
      assert.equal((await deliver(url, again)).status, 200)
      assert.equal(received.length, 1)
    }
  })

  it('calls again for a delivery whose handler failed, until one succeeds', async () => {
    for (const backend of backends) {
      received.length = 0
      failures = 2
      const url = `${backend.url}/campusgate/events`
      const event = signedEvent(secret, 'session.started', {
        ...data,
        sessionId: 's',
        expiresAt: 'x',
      })
      const statuses = []
      for (let i = 0; i < 4; i += 1) statuses.push((await deliver(url, event)).status)
      assert.deepEqual(statuses, [500, 500, 200, 200], backend.name)
      assert.equal(received.length, 1)
    }
  })

  it('answers 4xx to a bad, missing or stale signature and to a changed body, calls nothing, and tells onError why (issue 47)', async () => {
    for (const backend of backends) {
      received.length = 0
      const url = `${backend.url}/campusgate/events`
      const wrongSecret = signedEvent(newSecret(), 'user.erased', data)
      const changed = signedEvent(secret, 'user.erased', data)
      changed.body = changed.body.replace('open-1', 'open-2')
      const stale = signedEvent(secret, 'user.erased', data, new Date(Date.now() - 10 * 60_000))
      const ahead = signedEvent(secret, 'user.erased', data, new Date(Date.now() + 7 * 60_000))
      const unsigned = signedEvent(secret, 'user.erased', data)
      delete unsigned.headers['webhook-signature']
      const anonymous = signedEvent(secret, 'user.erased', data)
      delete anonymous.headers['webhook-id']
      delete anonymous.headers['webhook-timestamp']
      const notAnEvent = signedEvent(secret, 'user.erased', {})
      const large = signedEvent(secret, 'user.erased', { ...data, padding: 'x'.repeat(70_000) })
      for (const [what, event, status, reason, message] of [
        ['another secret', wrongSecret, 401, 'no-matching-secret', /no secret matches/],
        ['a changed body', changed, 401, 'no-matching-secret', /no secret matches/],
        [
          'a timestamp ten minutes old',
          stale,
          401,
          'timestamp-outside-tolerance',
          /60[01] s behind/,
        ],
        ['a timestamp ahead', ahead, 401, 'timestamp-outside-tolerance', /4(19|20) s ahead/],
        ['no signature', unsigned, 400, 'missing-headers', /missing webhook-signature$/],
        ['no id or timestamp', anonymous, 400, 'missing-headers', /webhook-id, webhook-timestamp/],
        ['a body with no openId', notAnEvent, 400, 'not-an-event', /not a campusgate event/],
        ['a body over 64 KiB', large, 413, 'too-large', /larger than 65536 bytes/],
      ] as const) {
        refused.length = 0
        const answer = await deliver(url, event)
        assert.equal(answer.status, status, `${backend.name}, ${what}`)
        assert.equal(refused.length, 1, `${backend.name}, ${what}: reported once`)
        assert.equal(refused[0].reason, reason, `${backend.name}, ${what}`)
        assert.equal(refused[0].status, status)
        assert.match(refused[0].message, message, `${backend.name}, ${what}`)
        assert.deepEqual(answer.body, { error: refused[0].message })
      }
      assert.equal(received.length, 0)
    }
  })

  it('answers 500 when the handler throws, so campusgate delivers again', async () => {
    for (const backend of backends) {
      failures = 1
      const answer = await deliver(
        `${backend.url}/campusgate/events`,
        signedEvent(secret, 'session.started', data),
      )
      assert.equal(answer.status, 500, backend.name)
    }
  })
})

describe('campusgate-node webhookHandler in several processes', () => {
  it('acknowledges a delivery one process handled when it reaches another through a shared seen store', async () => {
    const secret = newSecret()
    const shared = memorySeenStore()
    const calls: string[] = []
    const seen = {
      has: async (id: string) => shared.has(id),
      add: async (id: string, ttlMs: number) => {
        assert.equal(ttlMs, 24 * 60 * 60 * 1000, 'remembered for 24 hours')
        shared.add(id, ttlMs)
      },
    }
    const client = createClient({ baseUrl: 'http://127.0.0.1:9' })
    const processes = await Promise.all(
      BACKENDS.map((start) =>
        start(client, {
          secret,
          seen,
          on: { 'user.erased': (event) => void calls.push(event.id) },
        }),
      ),
    )
    try {
      const event = signedEvent(secret, 'user.erased', { userId: 'u', openId: 'o' })
      for (const backend of [...processes, ...processes]) {
        assert.equal((await deliver(`${backend.url}/campusgate/events`, event)).status, 200)
      }
      assert.deepEqual(calls, [event.headers['webhook-id']])
    } finally {
      for (const backend of processes) await backend.close()
      await client.close()
    }
  })

  it('without onError, warns once per reason', async () => {
    const warnings: (Error & { code?: string })[] = []
    const onWarning = (warning: Error) => warnings.push(warning)
    process.on('warning', onWarning)
    const secret = newSecret()
    const client = createClient({ baseUrl: 'http://127.0.0.1:9' })
    const backend = await BACKENDS[0](client, { secret })
    try {
      const url = `${backend.url}/campusgate/events`
      const data = { userId: 'u', openId: 'o' }
      for (let i = 0; i < 3; i += 1) {
        assert.equal(
          (await deliver(url, signedEvent(newSecret(), 'user.erased', data))).status,
          401,
        )
      }
      const stale = signedEvent(secret, 'user.erased', data, new Date(Date.now() - 3_600_000))
      assert.equal((await deliver(url, stale)).status, 401)
      await new Promise((resolve) => setImmediate(resolve))
      const ours = warnings.filter((warning) => warning.code === 'CAMPUSGATE_WEBHOOK_REFUSED')
      assert.equal(ours.length, 2)
      assert.match(ours[0].message, /no-matching-secret/)
      assert.match(
        ours[1].message,
        /\(timestamp-outside-tolerance\): webhook-timestamp is 360[01] s behind/,
      )
    } finally {
      process.off('warning', onWarning)
      await backend.close()
      await client.close()
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
      webhookHandler({
        secret,
        on: { 'user.erased': (event) => void received.push(event) },
        // The changed body's refusal is this test's to assert, not a warning to print.
        onError: () => undefined,
      }),
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
