// The client with `credentials`: keys checked through POST /introspect, on the backend's own budget.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import {
  CampusgateConfigurationError,
  createClient,
  type CheckFailure,
  type Client,
} from 'campusgate-node'
import { call, startService, type RunningService } from '../../../test/helpers/service.js'
import { BACKENDS, registerUser, type Backend } from './apps.js'

const FORUM = { id: 'forum', secret: 'forum-secret-0123456789' }

describe('campusgate-node with credentials: POST /introspect', () => {
  let service: RunningService
  const asked: string[] = []

  before(async () => {
    // A key may make two requests a minute: the phone's own budget.
    service = await startService(
      { BACKEND_CREDENTIALS: `${FORUM.id}:${FORUM.secret}`, RATE_LIMIT_PER_SESSION: '2' },
      {
        extend: (app) =>
          app.addHook(
            'onRequest',
            async (request) => void asked.push(`${request.method} ${request.url}`),
          ),
      },
    )
  })
  after(() => service.close())

  it("checks keys by introspection, on the backend's own budget, never the key's (issue 47)", async () => {
    const client = createClient({ baseUrl: service.url, credentials: FORUM })
    const backends: Backend[] = []
    try {
      for (const start of BACKENDS) backends.push(await start(client))
      const { key, openId } = await registerUser(service)
      asked.length = 0
      for (const backend of backends) {
        for (let i = 0; i < 10; i += 1) {
          const response = await call(`${backend.url}/profile`, { headers: { authorization: key } })
          assert.equal(response.status, 200, `${backend.name}: ${response.text}`)
          assert.deepEqual(response.body, { openId, tier: 'messenger-registered' })
        }
      }
      assert.deepEqual(new Set(asked), new Set(['POST /introspect']))
      assert.equal(asked.length, 20)
      // Twenty checks, and the phone still has both of its requests.
      assert.equal(
        (await call(`${service.url}/session`, { headers: { authorization: key } })).status,
        200,
      )
      assert.equal(
        (await call(`${service.url}/session`, { headers: { authorization: key } })).status,
        200,
      )
    } finally {
      for (const backend of backends) await backend.close()
      await client.close()
    }
  })

  it('gives the session in GET /session’s shape with the person’s userId, and null for an ended key', async () => {
    const client = createClient({ baseUrl: service.url, credentials: FORUM })
    try {
      const { key, openId } = await registerUser(service)
      const session = await client.session(key)
      const own = (await call(`${service.url}/session`, { headers: { authorization: key } })).body
      const introspected = await call(`${service.url}/introspect`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${FORUM.id}:${FORUM.secret}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ token: key }).toString(),
      })
      assert.deepEqual(session, {
        sessionId: own.sessionId,
        userId: introspected.body.sub,
        openId,
        appId: own.appId,
        platform: own.platform,
        tier: 'messenger-registered',
        // Introspection gives whole seconds.
        expiresAt: new Date(Math.floor(Date.parse(own.expiresAt) / 1000) * 1000).toISOString(),
      })
      await call(`${service.url}/logout`, { method: 'POST', headers: { authorization: key } })
      assert.equal(await client.session(key), null)
    } finally {
      await client.close()
    }
  })

  it('reports refused credentials and a campusgate without BACKEND_CREDENTIALS as configuration errors', async () => {
    const without = await startService()
    try {
      for (const [what, baseUrl, credentials, message] of [
        ['a wrong secret', service.url, { id: FORUM.id, secret: 'wrong' }, /401 invalid_client/],
        ['no BACKEND_CREDENTIALS', without.url, FORUM, /answered 404.*BACKEND_CREDENTIALS/],
      ] as const) {
        const causes: CheckFailure[] = []
        const client = createClient({
          baseUrl,
          credentials,
          onError: (cause) => causes.push(cause),
        })
        const backend = await BACKENDS[0](client)
        try {
          const response = await call(`${backend.url}/profile`, {
            headers: { authorization: 'some-key-0123456789' },
          })
          assert.equal(response.status, 503, what)
          assert.equal(causes.length, 1, what)
          assert.ok(causes[0] instanceof CampusgateConfigurationError, what)
          assert.match(causes[0].message, message)
          assert.ok(!causes[0].message.includes(credentials.secret), 'no secret in the message')
        } finally {
          await backend.close()
          await client.close()
        }
      }
    } finally {
      await without.close()
    }
  })

  it('refuses credentials without an id or a secret when the client is made', () => {
    const client: () => Client = () =>
      createClient({ baseUrl: service.url, credentials: { id: 'forum', secret: '' } })
    assert.throws(client, TypeError)
  })
})
