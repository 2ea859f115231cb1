import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { hashSecret } from '../../src/lib/secrets.js'
import { cipherFor } from '../../src/secrets-at-rest.js'
import { SANDBOX_APP } from '../../src/sandbox/routes.js'
import { call, freePort, MEDIA_TYPE, startService } from '../helpers/service.js'
import {
  mintLoginCode,
  registerMessenger,
  registerUniversity,
  sessionOf,
  startStack,
  userRowOf,
  type Stack,
} from '../helpers/stack.js'

describe('POST /register/messenger', () => {
  let stack: Stack
  let url: string
  before(async () => {
    stack = await startStack()
    url = `${stack.service.url}/register/messenger`
  })
  after(() => stack.close())

  async function register(body: unknown, headers: Record<string, string> = {}) {
    return call(url, { method: 'POST', headers, json: body })
  }

  it('returns a 256-bit base64url session key and its expiry', async () => {
    const { code } = await mintLoginCode(stack)
    const response = await register({ ...SANDBOX_APP, code })
    assert.equal(response.status, 200)
    assert.equal(response.headers.get('content-type'), MEDIA_TYPE)
    assert.deepEqual(Object.keys(response.body).sort(), ['expiresAt', 'sessionKey'])
    assert.match(response.body.sessionKey, /^[A-Za-z0-9_-]{43}$/)
    const expected = stack.service.clock.now().getTime() + 30 * 86_400_000
    assert.equal(Date.parse(response.body.expiresAt), expected)
  })

  it('stores the session key only as SHA-256 and the messenger session key encrypted (issue 15)', async () => {
    const { sessionKey, openId } = await registerMessenger(stack)
    const db = stack.service.db.kysely
    const user = await userRowOf(stack, openId)
    const session = await db
      .selectFrom('sessions')
      .selectAll()
      .where('user_id', '=', user.id)
      .executeTakeFirstOrThrow()
    assert.equal(session.key_hash, hashSecret(sessionKey))
    // The platform's session_key (16 bytes, base64) can be read back by the service, not from the row.
    const sealed = user.messenger_session_key ?? ''
    assert.match(sealed, /^v1\.[0-9a-f]{8}\./)
    const clear = cipherFor(stack.service.config).cipher.decrypt(sealed)
    assert.equal(Buffer.from(clear, 'base64').length, 16)
    assert.ok(!sealed.includes(clear))
    const dump = JSON.stringify(await db.selectFrom('sessions').selectAll().execute())
    assert.ok(!dump.includes(sessionKey))
  })

  for (const [name, body] of [
    ['appId is missing', { appSecret: SANDBOX_APP.appSecret, code: 'c' }],
    ['appSecret is missing', { appId: SANDBOX_APP.appId, code: 'c' }],
    ['code is missing', { ...SANDBOX_APP }],
    ['code is null', { ...SANDBOX_APP, code: null }],
    ['code is a number', { ...SANDBOX_APP, code: 12345 }],
    ['code is empty', { ...SANDBOX_APP, code: '' }],
    ['the body is an array', [SANDBOX_APP]],
  ] as const) {
    it(`answers 400 missing-required-keys when ${name}`, async () => {
      const response = await register(body)
      assert.equal(response.status, 400)
      assert.equal(response.headers.get('content-type'), MEDIA_TYPE)
      assert.deepEqual(response.body, { error: '@bad-request/missing-required-keys' })
    })
  }

  it('answers 400 missing-required-keys when there is no body at all', async () => {
    const response = await call(url, { method: 'POST' })
    assert.equal(response.status, 400)
    assert.deepEqual(response.body, { error: '@bad-request/missing-required-keys' })
  })

  it('answers 400 malformed-json for broken JSON', async () => {
    const response = await call(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"appId": "x",',
    })
    assert.equal(response.status, 400)
    assert.deepEqual(response.body, { error: '@bad-request/malformed-json' })
  })

  it('answers 415 json-required for a form body', async () => {
    const response = await call(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'appId=x&appSecret=y&code=z',
    })
    assert.equal(response.status, 415)
    assert.equal(response.headers.get('content-type'), MEDIA_TYPE)
    assert.deepEqual(response.body, { error: '@unsupported-media-type/json-required' })
  })

  it('accepts the versioned media type as the request content type', async () => {
    const { code } = await mintLoginCode(stack)
    const response = await call(url, {
      method: 'POST',
      headers: { 'content-type': MEDIA_TYPE },
      body: JSON.stringify({ ...SANDBOX_APP, code }),
    })
    assert.equal(response.status, 200)
  })

  it('answers 413 body-too-large over 16 KiB', async () => {
    const response = await register({ ...SANDBOX_APP, code: 'x'.repeat(17 * 1024) })
    assert.equal(response.status, 413)
    assert.deepEqual(response.body, { error: '@payload-too-large/body-too-large' })
  })

  for (const [name, change] of [
    ['the app secret is wrong', { appSecret: 'wrong-secret' }],
    ['the app id is unknown', { appId: 'wx-unknown' }],
    ['the login code is unknown', { code: 'no-such-code' }],
    ['a credential is absurdly long', { code: 'x'.repeat(2000) }],
  ] as const) {
    it(`answers 401 failed-messenger-authentication when ${name}`, async () => {
      const { code } = await mintLoginCode(stack)
      const response = await register({ ...SANDBOX_APP, code, ...change })
      assert.equal(response.status, 401)
      assert.deepEqual(response.body, { error: '@unauthorized/failed-messenger-authentication' })
    })
  }

  it('answers 401 when a login code is used twice (codes are single-use)', async () => {
    const { code } = await mintLoginCode(stack)
    assert.equal((await register({ ...SANDBOX_APP, code })).status, 200)
    const again = await register({ ...SANDBOX_APP, code })
    assert.equal(again.status, 401)
    assert.deepEqual(again.body, { error: '@unauthorized/failed-messenger-authentication' })
  })

  it('re-registration starts a second session: both keys work, the university link survives', async () => {
    const first = await registerUniversity(stack)
    const second = await registerMessenger(stack, first.openId)
    assert.notEqual(second.sessionKey, first.sessionKey)
    for (const key of [first.sessionKey, second.sessionKey]) {
      const current = await sessionOf(stack, key)
      assert.equal(current.status, 200)
      assert.equal(current.body.tier, 'university-registered')
    }
    const sessions = await stack.service.db.kysely
      .selectFrom('sessions')
      .innerJoin('identities', 'identities.user_id', 'sessions.user_id')
      .select('sessions.id')
      .where('identities.subject', '=', first.openId)
      .execute()
    assert.equal(sessions.length, 2)
  })

  it('never logs the app secret, the login code or the session key', async () => {
    const { code } = await mintLoginCode(stack)
    const response = await register({ ...SANDBOX_APP, code })
    const logs = stack.service.logs()
    assert.ok(!logs.includes(SANDBOX_APP.appSecret))
    assert.ok(!logs.includes(code))
    assert.ok(!logs.includes(response.body.sessionKey))
  })
})

/** campusgate against the messenger platform at `base`. */
function startAgainstPlatform(base: string, env: Record<string, string>) {
  // The sandbox runs only with no provider configured, so a (never called) identity provider too.
  return startService({
    MESSENGER_API_BASE_URL: base,
    UNIVERSITY_AUTHORIZE_URL: 'http://127.0.0.1:9/authorise',
    UNIVERSITY_TOKEN_URL: 'http://127.0.0.1:9/token',
    UNIVERSITY_CLIENT_ID: 'id',
    UNIVERSITY_CLIENT_SECRET: 'secret',
    ...env,
  })
}

describe('POST /register/messenger when the messenger platform misbehaves', () => {
  let upstream: Server
  let upstreamStatus = 500
  let upstreamBody = ''
  let upstreamUrl: string

  before(async () => {
    upstream = createServer((_req, res) => {
      res.writeHead(upstreamStatus, { 'content-type': 'text/plain' })
      res.end(upstreamBody)
    })
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
    upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`
  })
  after(() => new Promise<void>((resolve) => upstream.close(() => resolve())))

  async function registerAgainst(base: string, env: Record<string, string> = {}) {
    const service = await startAgainstPlatform(base, env)
    try {
      return await call(`${service.url}/register/messenger`, {
        method: 'POST',
        json: { appId: 'wx-app', appSecret: 'app-secret-value', code: 'login-code-value' },
      })
    } finally {
      await service.close()
    }
  }

  it('answers 502 when the platform answers 5xx', async () => {
    upstreamStatus = 503
    upstreamBody = 'down'
    const response = await registerAgainst(upstreamUrl)
    assert.equal(response.status, 502)
    assert.equal(response.headers.get('content-type'), MEDIA_TYPE)
    assert.deepEqual(response.body, { error: '@bad-gateway/messenger-platform-unavailable' })
  })

  it('answers 502 when the platform is unreachable', async () => {
    const response = await registerAgainst(`http://127.0.0.1:${await freePort()}`)
    assert.equal(response.status, 502)
    assert.deepEqual(response.body, { error: '@bad-gateway/messenger-platform-unavailable' })
  })

  it('answers 502 when the platform says it is busy (errcode -1)', async () => {
    upstreamStatus = 200
    upstreamBody = JSON.stringify({ errcode: -1, errmsg: 'system error' })
    const response = await registerAgainst(upstreamUrl)
    assert.equal(response.status, 502)
  })

  it('answers 401 for an errcode refusal and 502 for a body that is not JSON', async () => {
    upstreamStatus = 200
    upstreamBody = JSON.stringify({ errcode: 40029, errmsg: 'invalid code' })
    assert.equal((await registerAgainst(upstreamUrl)).status, 401)
    upstreamBody = '<html>proxy error</html>'
    assert.equal((await registerAgainst(upstreamUrl)).status, 502)
  })

  it('answers 502 without reading it whole when the platform answers more than 64 KiB', async () => {
    upstreamStatus = 200
    const identity = { openid: 'o-oversized', session_key: 'k1' }
    upstreamBody = JSON.stringify({ ...identity, padding: 'x'.repeat(64 * 1024) })
    const response = await registerAgainst(upstreamUrl)
    assert.equal(response.status, 502)
    assert.deepEqual(response.body, { error: '@bad-gateway/messenger-platform-unavailable' })
    // The same identity in an answer of ordinary size registers.
    upstreamBody = JSON.stringify(identity)
    assert.equal((await registerAgainst(upstreamUrl)).status, 200)
  })

  it('refuses app ids outside MESSENGER_ALLOWED_APP_IDS without asking the platform', async () => {
    upstreamStatus = 200
    upstreamBody = JSON.stringify({ openid: 'o1', session_key: 'k1' })
    const refused = await registerAgainst(upstreamUrl, {
      MESSENGER_ALLOWED_APP_IDS: 'wx-other,wx-more',
    })
    assert.equal(refused.status, 401)
    assert.deepEqual(refused.body, { error: '@unauthorized/failed-messenger-authentication' })
    const allowed = await registerAgainst(upstreamUrl, {
      MESSENGER_ALLOWED_APP_IDS: 'wx-other, wx-app',
    })
    assert.equal(allowed.status, 200)
  })

  it('logs why the platform failed in its own words: no secret, and nothing a client can redact', async () => {
    // A broken proxy in front of the platform that echoes the request, secret and code included.
    const echo = createServer((req, res) => res.end(`not json: ${req.url}`))
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve))
    const service = await startService({
      MESSENGER_API_BASE_URL: `http://127.0.0.1:${(echo.address() as AddressInfo).port}`,
      UNIVERSITY_AUTHORIZE_URL: 'http://127.0.0.1:9/authorise',
      UNIVERSITY_TOKEN_URL: 'http://127.0.0.1:9/token',
      UNIVERSITY_CLIENT_ID: 'id',
      UNIVERSITY_CLIENT_SECRET: 'secret',
    })
    try {
      const register = (appSecret: string, code: string) =>
        call(`${service.url}/register/messenger`, {
          method: 'POST',
          json: { appId: 'wx-app', appSecret, code },
        })
      assert.equal((await register('echoed-secret-4821', 'echoed-code-9135')).status, 502)
      // Values a client picks to match words of the log line must not blank them out.
      assert.equal((await register('JSON', 'not')).status, 502)
      const logs = service.logs()
      assert.ok(!logs.includes('echoed-secret-4821'))
      assert.ok(!logs.includes('echoed-code-9135'))
      assert.ok(!logs.includes('[redacted]'))
      const reasons = logs
        .split('\n')
        .filter((line) => line.includes('code2session answered something that is not JSON'))
      assert.equal(reasons.length, 2)
    } finally {
      await service.close()
      await new Promise<void>((resolve) => echo.close(() => resolve()))
    }
  })
})

describe('POST /register/messenger with server-held secrets (issue 37)', () => {
  let platform: Server
  let platformUrl: string
  /** The `secret` of every code2session call the platform received, by appId. */
  let received: { appid: string | null; secret: string | null }[] = []

  before(async () => {
    platform = createServer((req, res) => {
      const query = new URL(req.url ?? '/', 'http://platform').searchParams
      received.push({ appid: query.get('appid'), secret: query.get('secret') })
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.end(JSON.stringify({ openid: `o-${received.length}`, session_key: 'a2V5' }))
    })
    await new Promise<void>((resolve) => platform.listen(0, '127.0.0.1', resolve))
    platformUrl = `http://127.0.0.1:${(platform.address() as AddressInfo).port}`
  })
  after(() => new Promise<void>((resolve) => platform.close(() => resolve())))

  async function withService(
    env: Record<string, string>,
    run: (
      register: (body: unknown) => ReturnType<typeof call>,
      logs: () => string,
    ) => Promise<void>,
  ) {
    received = []
    const service = await startAgainstPlatform(platformUrl, env)
    try {
      await run(
        (body) => call(`${service.url}/register/messenger`, { method: 'POST', json: body }),
        () => service.logs(),
      )
    } finally {
      await service.close()
    }
  }

  it('calls code2session with the server-held secret, whatever the client sent', async () => {
    await withService({ MESSENGER_APP_SECRETS: 'wx-app:held-secret-5150' }, async (register) => {
      // A new client sends the placeholder; a client of the original server still sends the real
      // (or an old) secret: both register, and the platform only ever sees the server's.
      for (const appSecret of ['server-held', 'old-secret-from-package-7731']) {
        const response = await register({ appId: 'wx-app', appSecret, code: 'login-code' })
        assert.equal(response.status, 200)
        assert.match(response.body.sessionKey, /^[A-Za-z0-9_-]{43}$/)
      }
      assert.deepEqual(received, [
        { appid: 'wx-app', secret: 'held-secret-5150' },
        { appid: 'wx-app', secret: 'held-secret-5150' },
      ])
    })
  })

  it('still requires appSecret on the wire for an app whose secret the server holds', async () => {
    await withService({ MESSENGER_APP_SECRETS: 'wx-app:held-secret-5150' }, async (register) => {
      for (const appSecret of [undefined, null, '', 42]) {
        const response = await register({ appId: 'wx-app', appSecret, code: 'login-code' })
        assert.equal(response.status, 400)
        assert.deepEqual(response.body, { error: '@bad-request/missing-required-keys' })
      }
      assert.equal(received.length, 0)
    })
  })

  it('forwards the client secret for an app it does not name', async () => {
    await withService({ MESSENGER_APP_SECRETS: 'wx-app:held-secret-5150' }, async (register) => {
      const response = await register({ appId: 'wx-dev', appSecret: 'dev-secret', code: 'c' })
      assert.equal(response.status, 200)
      assert.deepEqual(received, [{ appid: 'wx-dev', secret: 'dev-secret' }])
    })
  })

  it('refuses the placeholder for an app it holds no secret of, and logs why (issue 47)', async () => {
    await withService(
      { MESSENGER_APP_SECRETS: 'wx-app:held-secret-5150' },
      async (register, logs) => {
        const response = await register({ appId: 'wx-real', appSecret: 'server-held', code: 'c' })
        assert.equal(response.status, 401)
        assert.deepEqual(response.body, { error: '@unauthorized/failed-messenger-authentication' })
        assert.equal(received.length, 0, 'the platform is not asked with the placeholder')
        const lines = logs()
          .split('\n')
          .filter((line) => line.includes('"messenger-secret-missing"'))
          .map((line) => JSON.parse(line) as { level: number; appId: string; msg: string })
        assert.equal(lines.length, 1)
        assert.equal(lines[0].level, 40)
        assert.equal(lines[0].appId, 'wx-real')
        assert.match(lines[0].msg, /MESSENGER_APP_SECRETS/)
        assert.match(lines[0].msg, /wx-real/)
        assert.ok(!logs().includes('held-secret-5150'), 'no secret in the log')
      },
    )
  })

  it('logs neither the held secret nor what the client sent in its place', async () => {
    await withService(
      { MESSENGER_APP_SECRETS: 'wx-app:held-secret-5150', LOG_LEVEL: 'trace' },
      async (register, logs) => {
        const response = await register({
          appId: 'wx-app',
          appSecret: 'old-secret-from-package-7731',
          code: 'login-code',
        })
        assert.equal(response.status, 200)
        assert.ok(!logs().includes('held-secret-5150'))
        assert.ok(!logs().includes('old-secret-from-package-7731'))
      },
    )
  })
})

describe('POST /register/messenger in the sandbox of npm start (issue 37)', () => {
  let service: Awaited<ReturnType<typeof startService>>
  before(async () => {
    // No provider configured: the sandbox is served by the service itself, as `npm start` does.
    service = await startService({})
  })
  after(() => service.close())

  async function loginCode(): Promise<string> {
    const response = await fetch(`${service.url}/_sandbox/messenger/login-codes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    })
    assert.equal(response.status, 200)
    return ((await response.json()) as { code: string }).code
  }

  it('takes the placeholder server-held for the sandbox app, and still refuses a wrong secret', async () => {
    const url = `${service.url}/register/messenger`
    const placeholder = await call(url, {
      method: 'POST',
      json: { appId: SANDBOX_APP.appId, appSecret: 'server-held', code: await loginCode() },
    })
    assert.equal(placeholder.status, 200)
    const real = await call(url, {
      method: 'POST',
      json: { ...SANDBOX_APP, code: await loginCode() },
    })
    assert.equal(real.status, 200)
    const wrong = await call(url, {
      method: 'POST',
      json: { appId: SANDBOX_APP.appId, appSecret: 'wrong', code: await loginCode() },
    })
    assert.equal(wrong.status, 401)
    assert.deepEqual(wrong.body, { error: '@unauthorized/failed-messenger-authentication' })
  })
})
