import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import SQLite from 'better-sqlite3'
import { ERRORS } from '../../src/errors.js'
import { EMPTY_OBJECT, errorResponses, jsonResponse } from '../../src/http/schemas.js'
import { SANDBOX_APP } from '../../src/sandbox/routes.js'
import { freshDatabase, TEST_DIALECT } from '../helpers/database.js'
import { call, MEDIA_TYPE, startService } from '../helpers/service.js'
import { startOidcStack } from '../helpers/oidc-stack.js'
import { startTcpProxy } from '../helpers/tcp-proxy.js'
import {
  mintLoginCode,
  registerMessenger,
  requestConfirmationLink,
  startStack,
  type Stack,
} from '../helpers/stack.js'
import { addForumRoute } from '../helpers/app-routes.js'
import { documentationProblems, type ProducedError } from '../helpers/documentation.js'
import { rawRequest } from '../helpers/raw-http.js'
import { fromConsole, signIn } from '../helpers/console.js'

const DATABASE_UNAVAILABLE = '@service-unavailable/database-unavailable'
const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')

/** The route a request path names in the OpenAPI document; `null` for an unknown endpoint. */
function routeOf(path: string): string | null {
  const route = path.split('?')[0] ?? ''
  if (route.startsWith('/sessions/')) return '/sessions/{id}'
  return route === '/nowhere' ? null : route
}

/**
 * Every row of the error table is produced by a real request here, and documented in the OpenAPI
 * document: a code that is never produced, or produced but undocumented, fails this file.
 */
describe('the error vocabulary', () => {
  let stack: Stack
  const produced = new Map<string, number>()
  const answered: ProducedError[] = []

  before(async () => {
    stack = await startStack(
      { MESSENGER_ALLOWED_APP_IDS: `${SANDBOX_APP.appId},wx-offline` },
      // No campusgate route needs tier 2; the app's own routes behind the guard do.
      {
        extend: (app) => {
          // The app's own routes, documented as docs/tier-guard.md shows.
          addForumRoute(app)
          app.post(
            '/forum/threads',
            {
              onRequest: app.requireTier('messenger-registered'),
              schema: {
                body: {
                  type: 'object',
                  required: ['title'],
                  properties: { title: { type: 'string', minLength: 1, maxLength: 200 } },
                },
                response: {
                  200: jsonResponse('The new thread.', EMPTY_OBJECT),
                  ...errorResponses(
                    'missingRequiredKeys',
                    'invalidValue',
                    'missingAuthorizationHeader',
                    'invalidSessionKey',
                  ),
                },
              },
            },
            () => ({}),
          )
        },
      },
    )
  })
  after(() => stack.close())

  async function expectError(
    path: string,
    init: Parameters<typeof call>[1],
    status: number,
    code: string,
  ) {
    const response = await call(`${stack.service.url}${path}`, init)
    assert.equal(response.status, status, `${path}: ${response.text}`)
    assert.equal(response.headers.get('content-type'), MEDIA_TYPE)
    assert.deepEqual(response.body, { error: code })
    produced.set(code, status)
    answered.push({ method: init?.method ?? 'GET', path: routeOf(path), status, code })
    return response
  }

  it('produces every 4xx code of the seed and of docs/decisions.md', async () => {
    const { sessionKey } = await registerMessenger(stack)
    const auth = { authorization: sessionKey }
    await expectError(
      '/register/messenger',
      { method: 'POST', json: {} },
      400,
      '@bad-request/missing-required-keys',
    )
    await expectError(
      '/register/university',
      { method: 'POST', headers: auth, json: { email: 'nope' } },
      400,
      '@bad-request/invalid-email',
    )
    await expectError(
      '/authorize/university',
      {},
      400,
      '@bad-request/missing-required-query-parameters',
    )
    await expectError(
      '/register/messenger',
      { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' },
      400,
      '@bad-request/malformed-json',
    )
    await expectError(
      '/register/messenger',
      { method: 'POST', json: { ...SANDBOX_APP, code: 'unknown' } },
      401,
      '@unauthorized/failed-messenger-authentication',
    )
    await expectError(
      '/authorize/university?universityRegistrationCode=unknown',
      {},
      401,
      '@unauthorized/invalid-university-registration-code',
    )
    await expectError(
      '/logout',
      { method: 'POST', headers: { authorization: 'x' } },
      401,
      '@unauthorized/invalid-session-key',
    )
    await expectError('/logout', { method: 'POST' }, 403, '@forbidden/missing-authorization-header')
    await expectError('/nowhere', {}, 404, '@not-found/unknown-endpoint')
    await expectError(
      '/sessions/not-a-session-of-this-user',
      { method: 'DELETE', headers: auth },
      404,
      '@not-found/unknown-session',
    )
    await expectError(
      '/session',
      { headers: { ...auth, accept: 'application/vnd.service.v2+json' } },
      406,
      '@not-acceptable/unsupported-api-version',
    )
    await expectError(
      '/register/messenger',
      { method: 'POST', json: { pad: 'x'.repeat(20_000) } },
      413,
      '@payload-too-large/body-too-large',
    )
    await expectError(
      '/register/messenger',
      { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hello' },
      415,
      '@unsupported-media-type/json-required',
    )
  })

  it('answers invalid-value, not missing-required-keys, for a present field that breaks its schema (issue 13)', async () => {
    const { sessionKey } = await registerMessenger(stack)
    const post = (json: unknown) => ({
      method: 'POST',
      headers: { authorization: sessionKey },
      json,
    })
    await expectError(
      '/forum/threads',
      post({ title: 'x'.repeat(300) }),
      400,
      '@bad-request/invalid-value',
    )
    await expectError(
      '/forum/threads',
      post({ title: '' }),
      400,
      '@bad-request/missing-required-keys',
    )
    await expectError(
      '/forum/threads',
      post({ title: 7 }),
      400,
      '@bad-request/missing-required-keys',
    )
    await expectError('/forum/threads', post({}), 400, '@bad-request/missing-required-keys')
  })

  it('produces 403 insufficient-registration-tier from the tier guard', async () => {
    const { sessionKey } = await registerMessenger(stack)
    await expectError(
      '/forum',
      { headers: { authorization: sessionKey } },
      403,
      '@forbidden/insufficient-registration-tier',
    )
  })

  it('produces 403 user-suspended for a registration of a suspended person', async () => {
    const { openId } = await registerMessenger(stack)
    const suspended = await stack.service.accounts.suspend({
      openId,
      reason: null,
      origin: { actor: 'cli:test', ip: null },
    })
    assert.deepEqual(suspended, { ended: 1 })
    const login = await mintLoginCode(stack, openId)
    await expectError(
      '/register/messenger',
      { method: 'POST', json: { ...SANDBOX_APP, code: login.code } },
      403,
      '@forbidden/user-suspended',
    )
  })

  it("produces 403 operator-role from the operator console for a viewer's action", async () => {
    const link = await stack.service.consoleSessions.createLink('vera', 'viewer', {
      actor: 'cli:test',
      ip: null,
    })
    const viewer = await signIn(stack.service, link.token)
    const answer = await fromConsole(
      stack.service,
      viewer,
      '/console/mail/any/retry',
      {},
      { accept: 'application/json' },
    )
    assert.equal(answer.status, 403, answer.text)
    // A console answer: its pages are no operations of the document (a shared response lists it).
    assert.deepEqual(JSON.parse(answer.text), { error: '@forbidden/operator-role' })
    produced.set('@forbidden/operator-role', 403)
  })

  it('produces 429 with Retry-After once a client exceeds the rate limit', async () => {
    const limited = await startService(
      {},
      { tweak: (config) => ({ ...config, rateLimit: { ...config.rateLimit, sensitiveMax: 3 } }) },
    )
    try {
      const open = (i: number) =>
        call(`${limited.url}/authorize/university?universityRegistrationCode=x${i}`)
      const statuses = []
      for (let i = 0; i < 3; i += 1) statuses.push((await open(i)).status)
      const response = await open(3)
      statuses.push(response.status)
      assert.deepEqual(statuses, [401, 401, 401, 429])
      assert.equal(response.headers.get('content-type'), MEDIA_TYPE)
      assert.match(response.headers.get('retry-after') ?? '', /^[1-9]\d*$/)
      assert.deepEqual(response.body, { error: '@too-many-requests/rate-limit-exceeded' })
      produced.set('@too-many-requests/rate-limit-exceeded', 429)
      answered.push({
        method: 'GET',
        path: '/authorize/university',
        status: 429,
        code: '@too-many-requests/rate-limit-exceeded',
      })
    } finally {
      await limited.close()
    }
  })

  it('produces 503 database-unavailable with Retry-After while the database cannot be reached', async () => {
    const { sessionKey } = await registerMessenger(stack)
    const logout = { method: 'POST', headers: { authorization: sessionKey } }
    if (TEST_DIALECT === 'sqlite') {
      // Another process holds the write lock past the busy timeout.
      const other = new SQLite(stack.service.config.database.url.slice('sqlite:'.length))
      other.exec('BEGIN IMMEDIATE')
      try {
        const response = await expectError('/logout', logout, 503, DATABASE_UNAVAILABLE)
        assert.match(response.headers.get('retry-after') ?? '', /^[1-9]\d*$/)
      } finally {
        other.exec('ROLLBACK')
        other.close()
      }
      return
    }
    // The service reaches PostgreSQL through a proxy that is then cut.
    const database = await freshDatabase()
    const server = new URL(process.env.DATABASE_URL!)
    const proxy = await startTcpProxy(Number(server.port || 5432), server.hostname)
    const viaProxy = new URL(database.url)
    viaProxy.host = `127.0.0.1:${proxy.port}`
    const cut = await startService({ DATABASE_URL: viaProxy.toString() })
    try {
      await proxy.cut()
      const response = await call(`${cut.url}/session`, { headers: { authorization: 'key' } })
      assert.equal(response.status, 503, response.text)
      assert.deepEqual(response.body, { error: DATABASE_UNAVAILABLE })
      assert.match(response.headers.get('retry-after') ?? '', /^[1-9]\d*$/)
      produced.set(DATABASE_UNAVAILABLE, 503)
      answered.push({ method: 'GET', path: '/session', status: 503, code: DATABASE_UNAVAILABLE })
    } finally {
      await cut.close()
      await proxy.close()
      await database.drop()
    }
  })

  it('produces 400 malformed-request, 408 and 431 at the protocol edge', async () => {
    const edge = await startService({ REQUEST_TIMEOUT: '1s' })
    try {
      for (const [request, status, code] of [
        ['GET /%c0 HTTP/1.1\r\nHost: x\r\n\r\n', 400, '@bad-request/malformed-request'],
        ['GET /session HTTP/1.1\r\nHost: x\r\n', 408, '@request-timeout/request-timed-out'],
        [
          `GET /session HTTP/1.1\r\nHost: x\r\nX-Filler: ${'a'.repeat(20_000)}\r\n\r\n`,
          431,
          '@request-header-fields-too-large/headers-too-large',
        ],
      ] as const) {
        const answer = await rawRequest(edge.url, request)
        assert.equal(answer.status, status)
        assert.equal(answer.headers['content-type'], MEDIA_TYPE)
        assert.deepEqual(JSON.parse(answer.body), { error: code })
        produced.set(code, status)
        answered.push({ method: 'GET', path: null, status, code })
      }
    } finally {
      await edge.close()
    }
  })

  it('produces 401 invalid-metrics-token and 503 not-ready from the operations endpoints', async () => {
    const guarded = await startService({ METRICS_TOKEN: 'metrics-token-0123456789abcdef' })
    try {
      const response = await call(`${guarded.url}/metrics`, {
        headers: { authorization: 'Bearer wrong' },
      })
      assert.equal(response.status, 401)
      assert.deepEqual(response.body, { error: '@unauthorized/invalid-metrics-token' })
      produced.set('@unauthorized/invalid-metrics-token', 401)
      answered.push({
        method: 'GET',
        path: '/metrics',
        status: 401,
        code: '@unauthorized/invalid-metrics-token',
      })
    } finally {
      await guarded.close()
    }
    await stack.service.db.kysely.schema.dropTable('kysely_migration').execute()
    await expectError('/readyz', {}, 503, '@service-unavailable/not-ready')
  })

  it('produces 502 when the messenger platform cannot be reached', async () => {
    await stack.providers.close()
    await expectError(
      '/register/messenger',
      { method: 'POST', json: { appId: 'wx-offline', appSecret: 's', code: 'c' } },
      502,
      '@bad-gateway/messenger-platform-unavailable',
    )
  })

  it('produces 400 email-domain-not-allowed where UNIVERSITY_EMAIL_DOMAINS restricts tier 2', async () => {
    const restricted = await startStack({ UNIVERSITY_EMAIL_DOMAINS: 'ucl.ac.uk' })
    try {
      const { sessionKey } = await registerMessenger(restricted)
      const response = await call(`${restricted.service.url}/register/university`, {
        method: 'POST',
        headers: { authorization: sessionKey },
        json: { email: 'someone@example.edu' },
      })
      assert.equal(response.status, 400, response.text)
      assert.deepEqual(response.body, { error: '@bad-request/email-domain-not-allowed' })
      const code = '@bad-request/email-domain-not-allowed'
      produced.set(code, 400)
      answered.push({ method: 'POST', path: '/register/university', status: 400, code })
    } finally {
      await restricted.close()
    }
  })

  it('produces 502 when the OpenID Provider cannot be discovered', async () => {
    const oidc = await startOidcStack()
    try {
      await oidc.oidc.close()
      const { sessionKey } = await registerMessenger(oidc)
      const link = await requestConfirmationLink(oidc, sessionKey, 'student@example.edu')
      const response = await call(link)
      assert.equal(response.status, 502, response.text)
      assert.deepEqual(response.body, { error: '@bad-gateway/university-provider-unavailable' })
      const code = '@bad-gateway/university-provider-unavailable'
      produced.set(code, 502)
      answered.push({ method: 'GET', path: '/authorize/university', status: 502, code })
    } finally {
      await oidc.close()
    }
  })

  it('produces 500 unexpected-error with no detail when the database fails', async () => {
    const { sessionKey } = await registerMessenger(stack).catch(() => ({ sessionKey: 'unused' }))
    await stack.service.db.kysely.schema.dropTable('sessions').execute()
    const response = await expectError(
      '/session',
      { headers: { authorization: sessionKey } },
      500,
      '@internal-server-error/unexpected-error',
    )
    assert.ok(!response.text.includes('sessions'), 'no SQL detail leaks')
    assert.match(
      stack.service.logs(),
      /no such table: sessions|relation \\"sessions\\" does not exist/,
    )
  })

  it('has produced every code of the table, each documented by the route that answered it and in the README', async () => {
    const document = (await call(`${stack.service.url}/openapi.json`)).body
    for (const { status, code } of Object.values(ERRORS)) {
      assert.equal(produced.get(code), status, `${code} was not produced`)
    }
    assert.deepEqual(documentationProblems(ERRORS, document, README, answered), [])
  })

  it('fails the documentation check when a code goes undocumented', async () => {
    const document = (await call(`${stack.service.url}/openapi.json`)).body
    const responses = document.paths['/register/university'].post.responses
    const errorSchema = responses['400'].content[MEDIA_TYPE].schema.properties.error as {
      enum: string[]
    }
    errorSchema.enum = errorSchema.enum.filter((code) => code !== '@bad-request/invalid-email')
    assert.deepEqual(documentationProblems(ERRORS, document, README, answered), [
      'POST /register/university answered 400 @bad-request/invalid-email, which it does not document',
      '400 @bad-request/invalid-email is documented by no operation',
    ])
    const withoutRow = README.replace(/^\| 502 .*$/m, '')
    assert.deepEqual(
      documentationProblems(
        ERRORS,
        (await call(`${stack.service.url}/openapi.json`)).body,
        withoutRow,
        answered,
      ),
      ['502 @bad-gateway/messenger-platform-unavailable is missing from the README'],
    )
  })
})
