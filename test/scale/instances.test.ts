import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { Redis } from 'ioredis'
import { SANDBOX_APP } from '../../src/sandbox/routes.js'
import { spawnService, stopProcess, waitUntilServing } from '../helpers/process.js'
import { freshDatabase, TEST_DIALECT, type TestDatabase } from '../helpers/database.js'
import { call, freePort } from '../helpers/service.js'
import { linkIn, startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'
import { CLIENT_ID, startProviders } from '../helpers/stack.js'

/**
 * Three campusgate processes on one PostgreSQL and one Redis, behaving as one service. The
 * providers and the SMTP server are real servers on loopback, shared by all three.
 */
describe('three instances on one PostgreSQL and one Redis', () => {
  const instances: ReturnType<typeof startInstance>[] = []
  let database: TestDatabase
  let providers: FastifyInstance
  let providersUrl: string
  let smtp: SmtpSink
  let redis: Redis
  let callbackUrl = ''

  before(async () => {
    assert.equal(TEST_DIALECT, 'postgres', 'set DATABASE_URL to a PostgreSQL server')
    assert.ok(process.env.REDIS_URL, 'set REDIS_URL')
    redis = new Redis(process.env.REDIS_URL, { maxRetriesPerRequest: 1 })
    await resetRateLimits()
    database = await freshDatabase()
    smtp = await startSmtpSink()
    const started = await startProviders(() => callbackUrl)
    providers = started.server
    providersUrl = started.url
    const ports = [await freePort(), await freePort(), await freePort()]
    // The emailed links name instance A, standing in for the load balancer's address.
    const publicBaseUrl = `http://127.0.0.1:${ports[0]}`
    for (const port of ports) {
      instances.push(
        startInstance({
          PORT: String(port),
          HOST: '127.0.0.1',
          PUBLIC_BASE_URL: publicBaseUrl,
          DATABASE_URL: database.url,
          REDIS_URL: process.env.REDIS_URL,
          SMTP_URL: smtp.url,
          ...started.env,
          LOG_LEVEL: 'warn',
        }),
      )
    }
    // All three start at once, so all three run the migrations at once.
    await Promise.all(
      instances.map((instance) => waitUntilServing(instance.run, `${instance.url}/openapi.json`)),
    )
  })

  after(async () => {
    await Promise.all(instances.map((instance) => stopProcess(instance.run)))
    await providers?.close()
    await smtp?.stop()
    await database?.drop()
    await resetRateLimits().catch(() => undefined)
    redis?.disconnect()
  })

  const [A, B, C] = [0, 1, 2]
  const on = (i: number, path: string) => `${instances[i].url}${path}`

  async function resetRateLimits(): Promise<void> {
    const keys = await redis.keys('campusgate:rate-limit:*')
    if (keys.length > 0) await redis.del(...keys)
  }

  async function register(
    i: number,
    openId?: string,
  ): Promise<{ sessionKey: string; openId: string }> {
    const minted = await fetch(`${providersUrl}/_sandbox/messenger/login-codes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(openId === undefined ? {} : { openId }),
    })
    const login = (await minted.json()) as { code: string; openId: string }
    const response = await call(on(i, '/register/messenger'), {
      method: 'POST',
      json: { ...SANDBOX_APP, code: login.code },
    })
    assert.equal(response.status, 200, response.text)
    return { sessionKey: response.body.sessionKey, openId: login.openId }
  }

  const whoAmI = (i: number, sessionKey: string) =>
    call(on(i, '/session'), { headers: { authorization: sessionKey } })

  it('a key issued by A works on B and C', async () => {
    const { sessionKey, openId } = await register(A)
    for (const i of [A, B, C]) {
      const response = await whoAmI(i, sessionKey)
      assert.equal(response.status, 200)
      assert.equal(response.body.openId, openId)
    }
  })

  it('a logout on C is refused on A at once', async () => {
    const { sessionKey } = await register(B)
    assert.equal((await whoAmI(A, sessionKey)).status, 200)
    const logout = await call(on(C, '/logout'), {
      method: 'POST',
      headers: { authorization: sessionKey },
    })
    assert.equal(logout.status, 200)
    const refused = await whoAmI(A, sessionKey)
    assert.equal(refused.status, 401)
    assert.deepEqual(refused.body, { error: '@unauthorized/invalid-session-key' })
  })

  it('a confirmation link from A completes through B and C', async () => {
    const user = await register(A)
    const before = smtp.messages.length
    const asked = await call(on(A, '/register/university'), {
      method: 'POST',
      headers: { authorization: user.sessionKey },
      json: { email: 'scale@example.edu' },
    })
    assert.equal(asked.status, 200)
    const mail = await smtp.waitFor(
      (m) => smtp.messages.indexOf(m) >= before && JSON.stringify(m.to).includes('scale@'),
    )
    const link = new URL(linkIn(mail))
    // The browser's click lands on B…
    const opened = await fetch(on(B, `${link.pathname}${link.search}`), { redirect: 'manual' })
    assert.equal(opened.status, 301)
    const cookie = (opened.headers.get('set-cookie') ?? '').split(';')[0]
    // …and the identity provider's redirect back lands on C.
    callbackUrl = on(C, '/authorize/university/callback')
    const decision = await fetch(`${providersUrl}/_sandbox/university/authorise/decision`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        client_id: CLIENT_ID,
        state: user.openId,
        decision: 'allow',
      }).toString(),
    })
    const back = await fetch(decision.headers.get('location')!, {
      headers: { cookie, accept: 'text/html' },
    })
    assert.match(await back.text(), /University account linked/)
    assert.equal((await whoAmI(A, user.sessionKey)).body.tier, 'university-registered')
  })

  it('mail queued across instances arrives exactly once each', async () => {
    const count = 12
    const before = smtp.messages.length
    const addresses: string[] = []
    await Promise.all(
      Array.from({ length: count }, async (_, n) => {
        const i = n % 3
        const user = await register(i)
        const email = `many-${n}-${Date.now()}@example.edu`
        addresses.push(email)
        const response = await call(on(i, '/register/university'), {
          method: 'POST',
          headers: { authorization: user.sessionKey },
          json: { email },
        })
        assert.equal(response.status, 200)
      }),
    )
    const arrived = () =>
      smtp.messages
        .slice(before)
        .filter((m) => addresses.some((a) => JSON.stringify(m.to).includes(a)))
    const deadline = Date.now() + 15_000
    while (arrived().length < count && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100))
    // Every worker polls each second; give them a few rounds to deliver anything twice.
    await new Promise((r) => setTimeout(r, 2500))
    const mails = arrived()
    assert.equal(mails.length, count)
    assert.equal(new Set(mails.map((m) => linkIn(m))).size, count)
  })

  it('a rate limit holds across instances', async () => {
    await resetRateLimits()
    const statuses: number[] = []
    for (let n = 0; n < 100; n += 1) {
      const response = await fetch(
        on(n % 3, `/authorize/university?universityRegistrationCode=probe-${n}`),
      )
      await response.arrayBuffer()
      statuses.push(response.status)
    }
    assert.ok(
      statuses.every((status) => status === 401),
      'the first 100 pass the limiter',
    )
    for (const i of [A, B, C]) {
      const response = await call(on(i, '/authorize/university?universityRegistrationCode=over'))
      assert.equal(response.status, 429, `instance ${i}`)
      assert.deepEqual(response.body, { error: '@too-many-requests/rate-limit-exceeded' })
    }
    // The counters are named by the limit and the client alone, nothing undefined between.
    const keys = await redis.keys('campusgate:rate-limit:*')
    assert.ok(keys.length > 0)
    for (const key of keys) {
      assert.match(
        key,
        /^campusgate:rate-limit:(address|sensitive|session|console-sign-in):[^:]/,
        key,
      )
      assert.doesNotMatch(key, /undefined/, key)
    }
  })

  it("counts failed console sign-ins across instances in the console's own counter", async () => {
    await resetRateLimits()
    const origin = new URL(instances[A].url).origin
    const signIn = (i: number) =>
      fetch(on(i, '/console/sign-in'), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin },
        body: 'token=guess',
        redirect: 'manual',
      })
    // RATE_LIMIT_CONSOLE_SIGN_IN_PER_ADDRESS: 10 by default, whichever instance is asked.
    for (let n = 0; n < 10; n += 1) {
      const response = await signIn(n % 3)
      await response.arrayBuffer()
      assert.equal(response.status, 401, `try ${n}`)
    }
    for (const i of [A, B, C]) {
      const response = await signIn(i)
      assert.equal(response.status, 429, `instance ${i}`)
      assert.match(await response.text(), /Too many failed sign-ins/)
      assert.ok(Number(response.headers.get('retry-after')) >= 1)
    }
    // Students on the same address are not held back by it.
    await register(B)
  })
})

/** One instance: its own process and the address it serves on. */
function startInstance(env: Record<string, string | undefined>) {
  return { url: `http://127.0.0.1:${env.PORT}`, run: spawnService(env) }
}
