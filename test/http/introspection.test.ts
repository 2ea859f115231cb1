import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { ConfigError, loadConfig } from '../../src/config.js'
import { spawnService } from '../helpers/process.js'
import { call, startService } from '../helpers/service.js'
import {
  logout,
  registerMessenger,
  registerUniversity,
  sessionOf,
  startStack,
  type Stack,
} from '../helpers/stack.js'

const FORUM = { id: 'forum', secret: 'forum-secret.0123456789_abcdefghij~' }
const PROFILES = { id: 'profiles', secret: 'profiles-secret-9876543210' }
const BACKEND_CREDENTIALS = `${FORUM.id}:${FORUM.secret},${PROFILES.id}:${PROFILES.secret}`
const DAY_MS = 86_400_000

const basic = ({ id, secret }: { id: string; secret: string }) =>
  `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`

/** POST /introspect as a backend's OAuth library sends it: Basic, a form body, Accept JSON. */
function introspect(
  url: string,
  token: string | null,
  options: {
    authorization?: string | null
    body?: string
    contentType?: string
    accept?: string
  } = {},
) {
  const headers: Record<string, string> = {
    'content-type': options.contentType ?? 'application/x-www-form-urlencoded',
    accept: options.accept ?? 'application/json',
  }
  const authorization = options.authorization === undefined ? basic(FORUM) : options.authorization
  if (authorization !== null) headers.authorization = authorization
  const body = options.body ?? (token === null ? '' : new URLSearchParams({ token }).toString())
  return call(`${url}/introspect`, { method: 'POST', headers, body })
}

describe('POST /introspect (RFC 7662) for the backends of BACKEND_CREDENTIALS', () => {
  let stack: Stack
  let url: string

  before(async () => {
    stack = await startStack({ BACKEND_CREDENTIALS })
    url = stack.service.url
  })
  after(() => stack.close())

  it('answers a live key with who it belongs to, in application/json, as GET /session names it', async () => {
    const { sessionKey, openId } = await registerMessenger(stack)
    const answer = await introspect(url, sessionKey)
    assert.equal(answer.status, 200, answer.text)
    assert.match(
      answer.headers.get('content-type') ?? '',
      /^application\/json(;\s*charset=utf-8)?$/,
    )
    assert.equal(answer.headers.get('cache-control'), 'no-store')
    const session = (await sessionOf(stack, sessionKey)).body
    const user = await stack.service.db.kysely
      .selectFrom('identities')
      .select('user_id as id')
      .where('subject', '=', openId)
      .executeTakeFirstOrThrow()
    const row = await stack.service.db.kysely
      .selectFrom('sessions')
      .select(['id', 'created_at'])
      .where('user_id', '=', user.id)
      .executeTakeFirstOrThrow()
    assert.deepEqual(answer.body, {
      active: true,
      sub: user.id,
      openId,
      appId: 'wx-sandbox-app',
      platform: 'wechat',
      tier: 'messenger-registered',
      sid: row.id,
      exp: Math.floor(Date.parse(session.expiresAt) / 1000),
      iat: Math.floor(Number(row.created_at) / 1000),
    })
    // Either configured backend may ask, whatever it accepts (no 406 here).
    const other = await introspect(url, sessionKey, {
      authorization: basic(PROFILES),
      accept: 'application/vnd.service.v2+json',
    })
    assert.equal(other.status, 200)
    assert.equal(other.body.active, true)
  })

  it('adds the university account of a tier-2 key as GET /session shows it', async () => {
    const { sessionKey } = await registerUniversity(stack, 'introspected@example.edu')
    const answer = await introspect(url, sessionKey)
    assert.equal(answer.body.tier, 'university-registered')
    assert.deepEqual(answer.body.university, (await sessionOf(stack, sessionKey)).body.university)
  })

  it('answers { active: false } for an unknown, ended, expired or overlong key', async () => {
    const ended = await registerMessenger(stack)
    await logout(stack, ended.sessionKey)
    for (const token of ['x'.repeat(43), ended.sessionKey, 'k'.repeat(5000)]) {
      const answer = await introspect(url, token)
      assert.equal(answer.status, 200)
      assert.deepEqual(answer.body, { active: false })
    }
    const expiring = await registerMessenger(stack)
    stack.service.clock.advance(31 * DAY_MS)
    assert.deepEqual((await introspect(url, expiring.sessionKey)).body, { active: false })
    assert.equal((await sessionOf(stack, expiring.sessionKey)).status, 401)
  })

  it('extends the validity of the key it checks, as GET /session does', async () => {
    const { sessionKey } = await registerMessenger(stack)
    const first = (await introspect(url, sessionKey)).body.exp as number
    stack.service.clock.advance(DAY_MS)
    const later = (await introspect(url, sessionKey)).body.exp as number
    assert.ok(later - first >= DAY_MS / 1000 - 120, `exp moved ${later - first} s`)
    // 29 more days from the check, not from the registration: the key lives on.
    stack.service.clock.advance(29 * DAY_MS + 60_000)
    assert.equal((await sessionOf(stack, sessionKey)).status, 200)
  })

  it('refuses a missing or wrong credential with 401 invalid_client and WWW-Authenticate: Basic', async () => {
    const { sessionKey } = await registerMessenger(stack)
    const wrong: [string, string | null][] = [
      ['no Authorization', null],
      ['a wrong secret', basic({ id: FORUM.id, secret: `${FORUM.secret}x` })],
      ["another backend's secret", basic({ id: FORUM.id, secret: PROFILES.secret })],
      ['an unknown backend', basic({ id: 'nobody', secret: FORUM.secret })],
      ['no colon', `Basic ${Buffer.from(FORUM.id).toString('base64')}`],
      ['a session key instead', sessionKey],
      ['a Bearer token', `Bearer ${FORUM.secret}`],
    ]
    for (const [what, authorization] of wrong) {
      const answer = await introspect(url, sessionKey, { authorization })
      assert.equal(answer.status, 401, what)
      assert.deepEqual(answer.body, { error: 'invalid_client' }, what)
      assert.equal(answer.headers.get('www-authenticate'), 'Basic', what)
      assert.match(answer.headers.get('content-type') ?? '', /^application\/json\b/, what)
    }
  })

  it('form-decodes the Basic id and secret first (RFC 6749 §2.3.1), so an encoded ~ authenticates', async () => {
    const { sessionKey } = await registerMessenger(stack)
    // The WHATWG form encoder (URLSearchParams) escapes `~`, as Java's URLEncoder does.
    const formEncode = (value: string) => new URLSearchParams({ v: value }).toString().slice(2)
    const encoded = `${formEncode(FORUM.id)}:${formEncode(FORUM.secret)}`
    assert.ok(encoded.includes('%7E'), encoded)
    const headers: [string, string][] = [
      ['the form encoding', encoded],
      ['lower-case escapes', encoded.replace('%7E', '%7e')],
      ['every character escaped', `%66%6F%72%75%6D:${FORUM.secret.replace('~', '%7E')}`],
    ]
    for (const [what, credential] of headers) {
      const authorization = `Basic ${Buffer.from(credential).toString('base64')}`
      const answer = await introspect(url, sessionKey, { authorization })
      assert.equal(answer.status, 200, `${what}: ${answer.text}`)
      assert.equal(answer.body.active, true, what)
    }
    // What decodes to another secret, or does not decode, is still refused.
    for (const credential of [
      `${FORUM.id}:${FORUM.secret.replace('~', '+')}`,
      `${FORUM.id}:${FORUM.secret.replace('~', '%7')}`,
      `${FORUM.id}:${FORUM.secret.replace('~', '%')}`,
    ]) {
      const authorization = `Basic ${Buffer.from(credential).toString('base64')}`
      const answer = await introspect(url, sessionKey, { authorization })
      assert.equal(answer.status, 401, credential)
      assert.deepEqual(answer.body, { error: 'invalid_client' })
    }
  })

  it('refuses a request without exactly one token with 400 invalid_request', async () => {
    const { sessionKey } = await registerMessenger(stack)
    const bodies: [string, string, string][] = [
      ['no body', '', 'application/x-www-form-urlencoded'],
      ['an empty token', 'token=', 'application/x-www-form-urlencoded'],
      [
        'two tokens',
        `token=${sessionKey}&token=${sessionKey}`,
        'application/x-www-form-urlencoded',
      ],
      ['a JSON body', JSON.stringify({ token: sessionKey }), 'application/json'],
    ]
    for (const [what, body, contentType] of bodies) {
      const answer = await introspect(url, null, { body, contentType })
      assert.equal(answer.status, 400, what)
      assert.deepEqual(answer.body, { error: 'invalid_request' }, what)
      assert.match(answer.headers.get('content-type') ?? '', /^application\/json\b/, what)
    }
    // The credential is checked first: without one, the body does not matter.
    const anonymous = await introspect(url, null, { authorization: null })
    assert.equal(anonymous.status, 401)
  })

  it('answers 16 KiB of repeated fields by the usual rules, and serves GET /healthz meanwhile', async () => {
    const { sessionKey } = await registerMessenger(stack)
    // Bodies of the largest size taken (16 KiB), each a field sent thousands of times.
    const repeatedToken = 'token=a&'.repeat(2048)
    const repeatedName = 't&'.repeat(8192)
    const keyAndRepeats = `token=${sessionKey}&${'x&'.repeat(8192 - sessionKey.length)}`
    for (const body of [repeatedToken, repeatedName, keyAndRepeats]) {
      assert.ok(Buffer.byteLength(body) <= 16 * 1024, `${Buffer.byteLength(body)} bytes`)
    }
    let settled = false
    const answers = Promise.all([
      introspect(url, null, { body: repeatedToken }),
      introspect(url, null, { body: repeatedName }),
      introspect(url, null, { body: repeatedName }),
      introspect(url, null, { body: keyAndRepeats }),
    ]).finally(() => (settled = true))
    // Liveness probes, one after another, for as long as the four bodies are being answered.
    let slowestMs = 0
    do {
      const started = Date.now()
      const health = await call(`${url}/healthz`)
      assert.equal(health.status, 200)
      slowestMs = Math.max(slowestMs, Date.now() - started)
    } while (!settled)
    // The parser's cost is proven by its unit test (test/unit/form-fields.test.ts); this bound
    // only says the process was not stalled: parsing such a body took seconds of CPU before, and
    // takes a millisecond now, far under this margin for a noisy machine.
    assert.ok(slowestMs < 3000, `a GET /healthz took ${slowestMs} ms`)
    const [token, name, again, key] = await answers
    // A field sent more than once is a list the schema refuses; an unknown one is ignored.
    for (const answer of [token, name, again]) {
      assert.equal(answer.status, 400, answer.text)
      assert.deepEqual(answer.body, { error: 'invalid_request' })
    }
    assert.equal(key.status, 200, key.text)
    assert.equal(key.body.active, true)
  })

  it('never writes a backend secret or an introspected key to the log', async () => {
    const { sessionKey } = await registerMessenger(stack)
    await introspect(url, sessionKey)
    await introspect(url, sessionKey, { authorization: basic({ id: 'x', secret: 'guess-1234' }) })
    const logs = stack.service.logs()
    for (const secret of [FORUM.secret, PROFILES.secret, sessionKey, 'guess-1234']) {
      assert.ok(!logs.includes(secret), 'a secret in the log')
    }
  })

  it('is described in the OpenAPI document, which passes redocly lint', async () => {
    const document = (await call(`${url}/openapi.json`)).body
    const operation = document.paths['/introspect'].post
    assert.deepEqual(operation.security, [{ backendCredentials: [] }])
    assert.deepEqual(document.components.securitySchemes.backendCredentials, {
      type: 'http',
      scheme: 'basic',
      description: 'A backend id and secret of BACKEND_CREDENTIALS.',
    })
    assert.deepEqual(Object.keys(operation.requestBody.content), [
      'application/x-www-form-urlencoded',
    ])
    assert.deepEqual(operation.responses['401'].content['application/json'].schema.properties, {
      error: { type: 'string', enum: ['invalid_client'] },
    })
    const dir = mkdtempSync(join(tmpdir(), 'campusgate-introspection-'))
    try {
      const file = join(dir, 'openapi.json')
      writeFileSync(file, JSON.stringify(document))
      const lint = spawnSync(
        resolve('node_modules/.bin/redocly'),
        ['lint', '--extends', 'recommended', file],
        {
          cwd: dir,
          encoding: 'utf8',
          env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
          timeout: 120_000,
        },
      )
      assert.equal(lint.status, 0, `${lint.stdout}${lint.stderr}`)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('POST /introspect and the rate limits', () => {
  it("counts against the backend's own limit, never the key's or the address's", async () => {
    const stack = await startStack({
      BACKEND_CREDENTIALS,
      RATE_LIMIT_PER_BACKEND: '5',
      RATE_LIMIT_PER_SESSION: '2',
      RATE_LIMIT_PER_ADDRESS: '4',
    })
    try {
      // One request of the address's four.
      const { sessionKey } = await registerMessenger(stack)
      const url = stack.service.url
      const statuses = []
      for (let i = 0; i < 6; i += 1) statuses.push((await introspect(url, sessionKey)).status)
      assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429])
      const refused = await introspect(url, sessionKey)
      assert.equal(refused.status, 429)
      assert.match(refused.headers.get('retry-after') ?? '', /^[1-9]\d*$/)
      assert.deepEqual(refused.body, { error: '@too-many-requests/rate-limit-exceeded' })
      // Another backend counts on its own.
      assert.equal(
        (await introspect(url, sessionKey, { authorization: basic(PROFILES) })).status,
        200,
      )
      // The key's own two requests are still there, and so are the address's three.
      assert.deepEqual(
        [(await sessionOf(stack, sessionKey)).status, (await sessionOf(stack, sessionKey)).status],
        [200, 200],
      )
      const unknown = []
      for (let i = 0; i < 4; i += 1) unknown.push((await call(`${url}/nowhere`)).status)
      assert.deepEqual(unknown, [404, 404, 404, 429])
    } finally {
      await stack.close()
    }
  })

  it('counts a wrong credential against the address, as a wrong session key is', async () => {
    const service = await startService({ BACKEND_CREDENTIALS, RATE_LIMIT_PER_ADDRESS: '2' })
    try {
      const guess = { authorization: basic({ id: FORUM.id, secret: 'guess' }) }
      const statuses = []
      for (let i = 0; i < 3; i += 1)
        statuses.push((await introspect(service.url, 'k', guess)).status)
      assert.deepEqual(statuses, [401, 401, 429])
    } finally {
      await service.close()
    }
  })
})

describe('POST /introspect without BACKEND_CREDENTIALS', () => {
  it('answers 404 unknown-endpoint, as any route campusgate does not have', async () => {
    const service = await startService()
    try {
      const answer = await introspect(service.url, 'k'.repeat(43))
      assert.equal(answer.status, 404)
      assert.deepEqual(answer.body, { error: '@not-found/unknown-endpoint' })
      const document = (await call(`${service.url}/openapi.json`)).body
      assert.equal(document.paths['/introspect'], undefined)
      assert.equal(document.components.securitySchemes.backendCredentials, undefined)
    } finally {
      await service.close()
    }
  })
})

describe('BACKEND_CREDENTIALS and RATE_LIMIT_PER_BACKEND', () => {
  it('reads id:secret items of unreserved characters, and a limit of 60000 by default', () => {
    const config = loadConfig({ BACKEND_CREDENTIALS: BACKEND_CREDENTIALS })
    assert.deepEqual(
      [...config.backends.credentials],
      [
        [FORUM.id, FORUM.secret],
        [PROFILES.id, PROFILES.secret],
      ],
    )
    assert.equal(config.backends.perBackendMax, 60_000)
    assert.equal(loadConfig({ RATE_LIMIT_PER_BACKEND: '0' }).backends.perBackendMax, 0)
    assert.equal(loadConfig({}).backends.credentials.size, 0)
    // The configuration prints no secret when logged as JSON.
    assert.ok(!JSON.stringify(loadConfig({ BACKEND_CREDENTIALS })).includes(FORUM.secret))
  })

  it('refuses a malformed list with one line naming BACKEND_CREDENTIALS and no secret', () => {
    for (const bad of [
      'forum',
      'forum:',
      ':very-secret-value',
      'forum:very-secret-value:more',
      'forum:very secret value',
      'forum:very-secret-value%21',
      'for um:very-secret-value',
      `forum:${'s'.repeat(257)}`,
      'forum:very-secret-value,forum:very-secret-value2',
    ]) {
      assert.throws(
        () => loadConfig({ BACKEND_CREDENTIALS: bad }),
        (error: unknown) =>
          error instanceof ConfigError &&
          error.problems.length === 1 &&
          error.problems[0].startsWith('BACKEND_CREDENTIALS: ') &&
          !error.message.includes('very-secret-value') &&
          !error.message.includes('sss'),
        bad,
      )
    }
    for (const bad of ['-1', 'lots', '1e12']) {
      assert.throws(
        () => loadConfig({ RATE_LIMIT_PER_BACKEND: bad }),
        (error: unknown) =>
          error instanceof ConfigError && error.message.startsWith('RATE_LIMIT_PER_BACKEND: '),
      )
    }
  })

  it('stops start-up with that line, and prints no secret', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'campusgate-start-'))
    try {
      const run = spawnService({ BACKEND_CREDENTIALS: 'forum:very-secret-value;' }, { cwd })
      assert.equal(await run.exited, 1)
      assert.match(run.stderr(), /^campusgate: invalid configuration: BACKEND_CREDENTIALS: /)
      assert.ok(!`${run.stdout()}${run.stderr()}`.includes('very-secret-value'))
    } finally {
      rmSync(cwd, { recursive: true, force: true })
    }
  })
})
