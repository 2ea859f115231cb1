import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { createClient, MEDIA_TYPE, type Client } from 'campusgate-node'
import { requireTier as expressGuard } from 'campusgate-node/express'
import { requireTier as fastifyGuard } from 'campusgate-node/fastify'
import { addForumRoute } from '../../../test/helpers/app-routes.js'
import { call, freePort, startService, type RunningService } from '../../../test/helpers/service.js'
import { BACKENDS, registerUser, startSilentServer, type Backend } from './apps.js'

/** What a guard answered, in the parts campusgate's own answers are compared on. */
async function answerOf(url: string, key?: string) {
  const headers: Record<string, string> = {}
  if (key !== undefined) headers.authorization = key
  const response = await fetch(url, { headers })
  return {
    status: response.status,
    body: await response.text(),
    contentType: response.headers.get('content-type'),
    cacheControl: response.headers.get('cache-control'),
    nosniff: response.headers.get('x-content-type-options'),
  }
}

describe('campusgate-node guards in front of the running campusgate', () => {
  let service: RunningService
  let client: Client
  const backends: Backend[] = []

  before(async () => {
    // campusgate's own tier-2 route, to compare the kit's answers with.
    service = await startService({}, { extend: addForumRoute })
    client = createClient({ baseUrl: service.url })
    for (const start of BACKENDS) backends.push(await start(client))
  })
  after(async () => {
    for (const backend of backends) await backend.close()
    await client.close()
    await service.close()
  })

  it('answers a missing header, an unknown key and a too-low tier exactly as campusgate does', async () => {
    const { key } = await registerUser(service)
    const cases: [string, string | undefined, number, string][] = [
      ['no Authorization', undefined, 403, '@forbidden/missing-authorization-header'],
      ['an empty Authorization', '', 403, '@forbidden/missing-authorization-header'],
      ['"Bearer" alone (a key of that name)', 'Bearer', 401, '@unauthorized/invalid-session-key'],
      ['an unknown key', 'no-such-key-0123456789', 401, '@unauthorized/invalid-session-key'],
      ['a key too long', 'k'.repeat(300), 401, '@unauthorized/invalid-session-key'],
      ['a tier-1 key', key, 403, '@forbidden/insufficient-registration-tier'],
      ['a tier-1 key as Bearer', `Bearer ${key}`, 403, '@forbidden/insufficient-registration-tier'],
    ]
    for (const [what, sent, status, code] of cases) {
      const expected = await answerOf(`${service.url}/forum`, sent)
      assert.equal(expected.status, status, `campusgate, ${what}`)
      assert.deepEqual(JSON.parse(expected.body), { error: code })
      assert.equal(expected.contentType, MEDIA_TYPE)
      for (const backend of backends) {
        const actual = await answerOf(`${backend.url}/forum`, sent)
        assert.deepEqual(actual, expected, `${backend.name}, ${what}`)
      }
    }
  })

  it('lets a key through that reaches the tier, with its session on the request', async () => {
    const { key, openId } = await registerUser(service)
    for (const backend of backends) {
      const response = await call(`${backend.url}/profile`, { headers: { authorization: key } })
      assert.equal(response.status, 200, backend.name)
      assert.deepEqual(response.body, { openId, tier: 'messenger-registered' })
    }
    // Linked at campusgate (as its callback does), the same key opens the tier-2 route.
    const db = service.db.kysely
    const { user_id: userId } = await db
      .selectFrom('identities')
      .select('user_id')
      .where('subject', '=', openId)
      .executeTakeFirstOrThrow()
    const now = service.clock.now().getTime()
    await db
      .insertInto('identities')
      .values({
        id: `${userId}-university`,
        user_id: userId,
        kind: 'university',
        provider: 'uclapi',
        realm: '',
        subject: null,
        union_id: null,
        secret: null,
        email: null,
        name: null,
        is_student: null,
        linked_at: now,
        binding: null,
        created_at: now,
        updated_at: now,
      })
      .execute()
    for (const backend of backends) {
      const response = await call(`${backend.url}/forum`, { headers: { authorization: key } })
      assert.equal(response.status, 200, `${backend.name}: ${response.text}`)
      assert.deepEqual(response.body, { forum: true, openId })
    }
  })

  it('refuses a tier it does not know when the route is set up', () => {
    assert.throws(() => expressGuard(client, 'admin' as never), TypeError)
    assert.throws(() => fastifyGuard(client, 'admin' as never), TypeError)
  })
})

describe('campusgate-node fails closed', () => {
  const unavailable = JSON.stringify({ error: '@service-unavailable/session-service-unavailable' })

  async function assertClosed(baseUrl: string, timeoutMs = 500): Promise<void> {
    const client = createClient({ baseUrl, timeoutMs })
    try {
      for (const start of BACKENDS) {
        const backend = await start(client)
        try {
          const started = Date.now()
          const response = await fetch(`${backend.url}/profile`, {
            headers: { authorization: 'some-key-0123456789' },
          })
          assert.equal(response.status, 503, backend.name)
          assert.equal(await response.text(), unavailable)
          assert.equal(response.headers.get('content-type'), MEDIA_TYPE)
          assert.equal(response.headers.get('retry-after'), '5')
          assert.ok(Date.now() - started < timeoutMs + 1500, `${backend.name} answered in time`)
          // No header is still refused without asking anyone.
          assert.equal((await fetch(`${backend.url}/profile`)).status, 403)
        } finally {
          await backend.close()
        }
      }
    } finally {
      await client.close()
    }
  }

  it('when nothing listens at campusgate', async () => {
    await assertClosed(`http://127.0.0.1:${await freePort()}`)
  })

  it('when campusgate accepts the connection and never answers past timeoutMs', async () => {
    const silent = await startSilentServer()
    try {
      await assertClosed(silent.url, 300)
    } finally {
      await silent.close()
    }
  })

  it('within timeoutMs in all when campusgate answers, but slowly, a piece at a time', async () => {
    // Headers, then a body chunk, each just inside timeoutMs of the last: no single wait is
    // too long, and the whole answer never comes.
    const timeoutMs = 600
    const step = timeoutMs * 0.8
    const timers = new Set<NodeJS.Timeout>()
    const server = createServer((_request, response) => {
      const later = (then: () => void) => {
        const timer = setTimeout(() => {
          timers.delete(timer)
          then()
        }, step)
        timers.add(timer)
      }
      const trickle = () => {
        response.write(' ')
        later(trickle)
      }
      later(() => {
        response.writeHead(200, { 'content-type': MEDIA_TYPE })
        response.write('{"openId":')
        later(trickle)
      })
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const client = createClient({
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      timeoutMs,
    })
    const backends: Backend[] = []
    try {
      for (const start of BACKENDS) backends.push(await start(client))
      for (const backend of backends) {
        const started = Date.now()
        const response = await fetch(`${backend.url}/profile`, {
          headers: { authorization: 'some-key-0123456789' },
          // Without a bound of its own, the guard would wait for as long as the trickle lasts.
          signal: AbortSignal.timeout(timeoutMs * 5),
        })
        assert.equal(response.status, 503, backend.name)
        assert.equal(await response.text(), unavailable)
        const took = Date.now() - started
        assert.ok(took < timeoutMs * 2, `${backend.name} answered after ${took} ms`)
      }
    } finally {
      // The trickle first, so a check still waiting on it ends and the backends can close.
      for (const timer of timers) clearTimeout(timer)
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
      for (const backend of backends) await backend.close()
      await client.close()
    }
  })

  for (const status of [500, 502, 503]) {
    it(`when what answers at campusgate's address answers ${status}`, async () => {
      const server = createServer((_request, response) => {
        response.writeHead(status, { 'content-type': MEDIA_TYPE })
        response.end(JSON.stringify({ error: '@internal-server-error/unexpected-error' }))
      })
      server.listen(0, '127.0.0.1')
      await once(server, 'listening')
      try {
        await assertClosed(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
      } finally {
        server.closeAllConnections()
        await new Promise((resolve) => server.close(resolve))
      }
    })
  }
})
