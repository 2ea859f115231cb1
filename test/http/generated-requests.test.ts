import assert from 'node:assert/strict'
import { Agent, request as httpRequest } from 'node:http'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import { SANDBOX_APP } from '../../src/sandbox/routes.js'
import { addForumRoute } from '../helpers/app-routes.js'
import { undocumentedAnswer } from '../helpers/documentation.js'
import { abortedRequest, rawRequest } from '../helpers/raw-http.js'
import { MEDIA_TYPE, type ServiceOptions } from '../helpers/service.js'
import {
  CLIENT_ID,
  CLIENT_SECRET,
  openLink,
  registerMessenger,
  registerUniversity,
  requestConfirmationLink,
  sessionOf,
  startStack,
  type Stack,
} from '../helpers/stack.js'

// A fixed seed, so a run is repeatable; FAST_CHECK_SEED picks another.
const SEED = Number(process.env.FAST_CHECK_SEED ?? 20260115)
/** Generated requests over HTTP per pass: batches of BATCH, sent 12 at a time. */
const BATCH = 50
const RUNS = 200
const IN_FLIGHT = 12
/** Paths served but left out of the OpenAPI document: the document itself and its viewer. */
const HIDDEN = ['/openapi.json', '/docs']

interface Generated {
  method: string
  /** Path and query exactly as written on the request line. */
  target: string
  headers: [string, string | string[]][]
  body: string | undefined
  /** Which real user's key to send (read-only routes only), or none. */
  realKey: number | null
}

interface Answer {
  status: number
  contentType: string | undefined
  body: string
}

/** Answered statuses and 5xx over the whole file, for the diagnostic. */
const figures = {
  sent: 0,
  serverErrors: 0,
  notReady: 0,
  bodilessEdge: 0,
  raw: 0,
  samples: [] as string[],
}

// ---- what a client can put in a request ------------------------------------------------------

const keyShaped = fc
  .uint8Array({ minLength: 32, maxLength: 32 })
  .map((bytes) => Buffer.from(bytes).toString('base64url'))

/** Strings meant to break things: empty, huge, unicode, control characters, look-alikes. */
const nasty = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    'null',
    'undefined',
    'true',
    '0',
    '-1',
    '1e309',
    'NaN',
    '__proto__',
    'constructor',
    'prototype',
    '{"__proto__":{"admin":true}}',
    '../../etc/passwd',
    '%00',
    '%zz',
    '\u202e\u0645\u0631\u062d\u0628\u0627',
    '𝓊𝓃𝒾𝒸ℴ𝒹ℯ',
    '\ud800',
    '\u001b[31mred\u001b[0m',
    'line\r\nInjected: yes',
    'a@b',
    'student@example.edu',
    '"><script>alert(1)</script>',
    "' OR '1'='1",
    SANDBOX_APP.appId,
    SANDBOX_APP.appSecret,
    CLIENT_ID,
    CLIENT_SECRET,
  ),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  keyShaped,
  fc.integer({ min: 1000, max: 20_000 }).map((n) => 'x'.repeat(n)),
)

/** Any JSON value, objects with the routes' keys and prototype-polluting ones among them. */
const KEYS = ['appId', 'appSecret', 'code', 'email', '__proto__', 'constructor', 'prototype', '']
const jsonValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    nasty,
    fc.constantFrom(null, true, false, 0, -1, 1.5, 1e308, Number.MAX_SAFE_INTEGER + 2),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.oneof(fc.constantFrom(...KEYS), fc.string({ maxLength: 8 })), tie('value'), {
      maxKeys: 5,
    }),
  ),
})).value

/** A body object whose keys are mostly the ones some route reads. */
const routeBody = fc.record(
  {
    appId: jsonValue,
    appSecret: jsonValue,
    code: jsonValue,
    email: jsonValue,
    extra: jsonValue,
  },
  { requiredKeys: [] },
)

const bodyText = fc.oneof(
  routeBody.map((body) => JSON.stringify(body)),
  jsonValue.map((value) => JSON.stringify(value) ?? ''),
  // Keys JSON.stringify would never write as own properties.
  fc.constantFrom(
    '{"__proto__":{"appId":"x","appSecret":"y","code":"z"}}',
    '{"constructor":{"prototype":{"email":"a@b.c"}}}',
    '{"appId":"a","appId":"b","appSecret":"c","code":"d"}',
    '{"email":"a@example.edu","email":null}',
  ),
  // Malformed JSON and other media.
  fc.constantFrom('{', '{"appId":', '[1,2', '{"a":1}}', 'nul', '\u0000', '\ufeff{}', 'a=b&c=d', ''),
  fc.string({ unit: 'binary', maxLength: 64 }),
  // Over the 16 KiB body limit, and deep nesting.
  fc.integer({ min: 16_000, max: 40_000 }).map((n) => JSON.stringify({ email: 'a'.repeat(n) })),
  fc.integer({ min: 100, max: 5000 }).map((n) => '['.repeat(n) + ']'.repeat(n)),
)

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json;charset=UTF-8',
  'APPLICATION/JSON',
  `${MEDIA_TYPE}`,
  'application/vnd.service.v2+json',
  'application/merge-patch+json',
  'application/json; charset=utf-16',
  'application/json, text/plain',
  'text/plain',
  'text/json',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/octet-stream',
  '',
  ';;;',
  'application/json; boundary="',
]
const ACCEPTS = [
  MEDIA_TYPE,
  '*/*',
  'application/*',
  'application/json',
  'application/vnd.service+json',
  'application/vnd.service.v2+json',
  'application/vnd.service.v1+json;q=0',
  'application/vnd.service.v2+json, application/vnd.service.v1+json;q=0.1',
  'text/html',
  'text/html,*/*;q=0.8',
  'image/png',
  '',
  ',,,',
  '*/*;q=abc',
  'application/vnd.service.v1+json; version=2',
]

/** Header values Node's client can write (no CR, LF or NUL; those go over the raw socket). */
const headerValue = nasty.map((value) =>
  Buffer.from(value, 'utf8')
    .toString('latin1')
    // eslint-disable-next-line no-control-regex -- control characters are what is being removed
    .replace(/[\u0000-\u0008\u000a-\u001f\u007f]/g, '?')
    .slice(0, 8000),
)

const authorization = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom('', 'Bearer', 'Bearer ', 'Basic dXNlcjpwYXNz', 'null', 'Bearer Bearer x'),
  keyShaped,
  keyShaped.map((key) => `Bearer ${key}`),
  keyShaped.map((key) => `bearer  ${key} `),
  headerValue,
)

const headers: fc.Arbitrary<[string, string | string[]][]> = fc
  .tuple(
    fc.option(fc.constantFrom(...ACCEPTS), { nil: undefined }),
    fc.option(fc.constantFrom(...CONTENT_TYPES), { nil: undefined }),
    authorization,
    fc.array(
      fc.tuple(
        fc.constantFrom(
          'accept',
          'authorization',
          'content-type',
          'cookie',
          'user-agent',
          'x-forwarded-for',
          'x-forwarded-host',
          'x-forwarded-proto',
          'x-real-ip',
          'forwarded',
          'origin',
          'referer',
          'if-none-match',
          'range',
          'content-encoding',
          'accept-encoding',
          'expect',
          'x-http-method-override',
          '__proto__',
          'constructor',
          'x-' + 'a'.repeat(200),
        ),
        fc.oneof(
          headerValue,
          fc.array(headerValue, { minLength: 2, maxLength: 3 }),
          keyShaped.map((value) => `campusgate-attempt=${value}`),
        ),
      ),
      { maxLength: 4 },
    ),
  )
  .map(([accept, contentType, auth, extra]) => {
    const list: [string, string | string[]][] = []
    if (accept !== undefined) list.push(['accept', accept])
    if (contentType !== undefined) list.push(['content-type', contentType])
    if (auth !== undefined) list.push(['authorization', auth])
    return [...list, ...extra]
  })

const QUERY_KEYS = [
  'universityRegistrationCode',
  'client_id',
  'state',
  'client_secret',
  'code',
  'result',
  'iss',
  'error',
  'error_description',
  '__proto__',
  'constructor',
  'universityRegistrationCode[]',
  'a[b]',
  '',
]
const query = fc
  .array(
    fc.tuple(
      fc.constantFrom(...QUERY_KEYS),
      fc.oneof(nasty, fc.constantFrom(CLIENT_ID, CLIENT_SECRET, 'denied', 'allow')),
      fc.boolean(),
    ),
    { maxLength: 6 },
  )
  .map((pairs) =>
    pairs
      .map(([key, value, encoded]) =>
        // Unencoded values carry raw %, & and = through; anything Node refuses to write is escaped.
        encoded
          ? `${encodeURIComponent(key)}=${[...value].map(escapeChar).join('')}`
          : // eslint-disable-next-line no-control-regex -- control characters are what is being escaped
            `${key}=${value}`.replace(/[\u0000-\u0020\u007f-\uffff]/g, escapeChar),
      )
      .join('&'),
  )

/** Percent-encodes one character; a lone surrogate, which has no UTF-8 form, as `%3F`. */
function escapeChar(char: string): string {
  try {
    return encodeURIComponent(char)
  } catch {
    return '%3F'
  }
}

const ODD_PATHS = [
  '/',
  '*',
  '/session/',
  '//session',
  '/SESSION',
  '/Session',
  '/sess%69on',
  '/session/..',
  '/session/%2e%2e',
  '/register/messenger/',
  '/register/messenger%20',
  '/register',
  '/authorize',
  '/authorize/university/callback/extra',
  '/authorize%2funiversity',
  '/%c0',
  '/session/%zz',
  '/%00',
  '/__proto__',
  '/constructor',
  '/prototype',
  '/hasOwnProperty',
  '/_sandbox/messenger/login-codes',
  '/_sandbox/university/token',
  '/docs/static/../../../package.json',
  '/docs/json',
  '/.env',
  '/session;jsessionid=1',
  '/é',
  '/%F0%9F%92%A5',
  `/${'a'.repeat(6000)}`,
]

function request(documented: readonly { method: string; path: string }[]): fc.Arbitrary<Generated> {
  const known = fc.constantFrom(...documented)
  const method = fc.oneof(
    fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'),
    fc.constantFrom('PROPFIND', 'FOO', 'CONNECTX', 'SEARCH', 'QUERY'),
  )
  const target = fc.oneof(
    { weight: 5, arbitrary: known.map(({ method, path }) => ({ method, path })) },
    { weight: 2, arbitrary: fc.tuple(method, known).map(([m, { path }]) => ({ method: m, path })) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(method, fc.constantFrom(...ODD_PATHS))
        .map(([m, path]) => ({ method: m, path })),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(method, fc.string({ unit: 'grapheme', maxLength: 20 }))
        .map(([m, text]) => ({ method: m, path: `/${encodeURIComponent(text)}` })),
    },
  )
  return fc
    .record({
      target,
      query,
      headers,
      body: fc.option(bodyText, { nil: undefined, freq: 3 }),
      realKey: fc.option(fc.nat(3), { nil: null, freq: 4 }),
    })
    .map(({ target: { method, path }, query, headers, body, realKey }) => ({
      method,
      target: query === '' ? path : `${path}?${query}`,
      headers,
      // GET and HEAD bodies are odd too, but only where a body is expected is it common.
      body:
        method === 'GET' || method === 'HEAD'
          ? (body?.length ?? 0) < 100
            ? body
            : undefined
          : body,
      realKey,
    }))
}

// ---- sending -----------------------------------------------------------------------------------

/** Sends one request on a keep-alive connection; retries once a connection the server closed. */
function send(
  url: string,
  agent: Agent,
  generated: Generated,
  realKeys: string[],
): Promise<Answer> {
  const { hostname, port } = new URL(url)
  const attempt = (retry: boolean): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const req = httpRequest({
        host: hostname,
        port,
        method: generated.method,
        path: generated.target,
        agent,
        headers: { host: `${hostname}:${port}` },
      })
      for (const [name, value] of generated.headers) {
        const previous = req.getHeader(name)
        const merged =
          previous === undefined || name === 'host'
            ? value
            : [...[previous].flat().map(String), ...[value].flat()]
        req.setHeader(name, merged)
      }
      if (generated.realKey !== null && readOnly(generated)) {
        req.setHeader('authorization', realKeys[generated.realKey % realKeys.length])
      }
      req.on('response', (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            contentType: res.headers['content-type'],
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        )
        res.on('error', reject)
      })
      req.on('error', (error: NodeJS.ErrnoException) => {
        if (retry && (error.code === 'ECONNRESET' || error.code === 'EPIPE')) {
          attempt(false).then(resolve, reject)
        } else reject(error)
      })
      // Node's client frames no body of GET, HEAD, DELETE or OPTIONS by itself: unframed, the
      // body's bytes would reach the server as the start of another request (which it answers
      // 400 and closes), not as this request's body.
      if (generated.body !== undefined && req.getHeader('content-length') === undefined) {
        req.setHeader('content-length', Buffer.byteLength(generated.body))
      }
      req.end(generated.body)
    })
  return attempt(true)
}

/** Real keys go only where a request changes nothing when it succeeds. */
function readOnly(generated: Generated): boolean {
  const path = generated.target.split('?')[0]
  return (
    (generated.method === 'GET' || generated.method === 'HEAD') &&
    (path === '/session' || path === '/forum' || path === '/healthz')
  )
}

/** The path the router matches: percent-decoded, without the query. */
function routedPath(target: string): string {
  // An absolute-form target (`GET http://host/session`) is routed by its path.
  const path = target.replace(/^[a-z]+:\/\/[^/]*/i, '').split('?')[0] ?? ''
  try {
    // The router keeps an encoded slash inside its segment: /authorize%2funiversity is no route.
    return decodeURIComponent(path.replace(/%2f/gi, '%252F'))
  } catch {
    return path
  }
}

function errorCode(answer: Answer): string | undefined {
  try {
    const parsed = JSON.parse(answer.body) as { error?: unknown }
    return typeof parsed.error === 'string' ? parsed.error : undefined
  } catch {
    return undefined
  }
}

/** Runs `tasks` with at most `limit` in flight. */
async function inParallel<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>) {
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await task(items[next++])
    }),
  )
}

// ---- the service under test ------------------------------------------------------------------

/** The app's own routes behind the tier guard, documented as docs/tier-guard.md shows. */
const withAppRoute = (options: ServiceOptions): ServiceOptions => ({
  ...options,
  extend: addForumRoute,
})

const UNLIMITED: ServiceOptions = {
  tweak: (config) => ({
    ...config,
    rateLimit: {
      ...config.rateLimit,
      globalMax: 1_000_000,
      sensitiveMax: 1_000_000,
      perSessionMax: 1_000_000,
    },
  }),
}

const TABLES = [
  'users',
  'sessions',
  'registration_codes',
  'university_attempts',
  'mail_outbox',
] as const

/** Every row of the tables a rejected request must not touch, as comparable text. */
async function snapshot(stack: Stack): Promise<Record<string, unknown[]>> {
  const tables: Record<string, unknown[]> = {}
  for (const table of TABLES) {
    tables[table] = await stack.service.db.kysely
      .selectFrom(table)
      .selectAll()
      .orderBy('id')
      .execute()
  }
  return tables
}

/** Waits until the mail worker has delivered everything queued (it updates outbox rows). */
async function outboxSettled(stack: Stack): Promise<void> {
  for (let i = 0; i < 500; i += 1) {
    const pending = await stack.service.db.kysely
      .selectFrom('mail_outbox')
      .select('id')
      .where('sent_at', 'is', null)
      .where('abandoned_at', 'is', null)
      .execute()
    if (pending.length === 0) return
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  assert.fail('the outbox never settled')
}

interface Fuzzed {
  stack: Stack
  document: Parameters<typeof undocumentedAnswer>[0]
  operations: { method: string; path: string }[]
  realKeys: string[]
}

async function fuzzedService(
  env: Record<string, string>,
  options: ServiceOptions,
): Promise<Fuzzed> {
  const stack = await startStack({ REQUEST_TIMEOUT: '2s', ...env }, withAppRoute(options))
  const document = (await (
    await fetch(`${stack.service.url}/openapi.json`)
  ).json()) as Fuzzed['document'] & {
    paths: Record<string, Record<string, unknown>>
  }
  const operations = [
    ...Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => ({ method: method.toUpperCase(), path })),
    ),
    ...HIDDEN.map((path) => ({ method: 'GET', path })),
  ]
  return { stack, document, operations, realKeys: [] }
}

/** Sends `runs` batches of generated requests and checks every answer against the document. */
async function sendGenerated(fuzzed: Fuzzed, runs: number): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: IN_FLIGHT })
  try {
    await fc.assert(
      fc.asyncProperty(
        fc.array(request(fuzzed.operations), { minLength: BATCH, maxLength: BATCH }),
        async (batch) => {
          const problems: string[] = []
          await inParallel(batch, IN_FLIGHT, async (generated) => {
            const answer = await send(fuzzed.stack.service.url, agent, generated, fuzzed.realKeys)
            figures.sent += 1
            // Readiness may say "not ready" when the database is slow to answer its probe: a
            // documented verdict about the instance, counted apart, not a failure of the request.
            const notReady =
              routedPath(generated.target) === '/readyz' &&
              errorCode(answer) === '@service-unavailable/not-ready'
            if (notReady) figures.notReady += 1
            // The protocol edge leaves the body out when the refused bytes could be a HEAD
            // request: its status alone is the answer. They show another method unless they
            // are the later reads of headers too large (431).
            const bodilessEdge =
              answer.body === '' &&
              answer.contentType === MEDIA_TYPE &&
              (answer.status === 431 || (answer.status === 400 && generated.method === 'HEAD'))
            if (bodilessEdge) figures.bodilessEdge += 1
            if (answer.status >= 500 && !notReady) {
              figures.serverErrors += 1
              if (figures.samples.length < 5)
                figures.samples.push(
                  `${JSON.stringify(generated).slice(0, 600)} -> ${answer.status} ${answer.body.slice(0, 200)}`,
                )
            }
            const problem =
              notReady || bodilessEdge
                ? null
                : answer.status >= 500
                  ? `${generated.method} ${generated.target.slice(0, 200)} answered ${answer.status}: ${answer.body.slice(0, 200)}`
                  : undocumentedAnswer(
                      fuzzed.document,
                      {
                        method: generated.method,
                        path: routedPath(generated.target),
                        status: answer.status,
                        code: errorCode(answer),
                        hasBody: answer.body !== '',
                      },
                      HIDDEN,
                    )
            if (problem !== null)
              problems.push(`${problem} (target ${generated.target.slice(0, 300)})`)
            else if (!bodilessEdge && answer.status >= 400 && generated.method !== 'HEAD') {
              // An error body is exactly `{ error }` in the media type.
              if (
                answer.contentType !== MEDIA_TYPE ||
                Object.keys(JSON.parse(answer.body)).length !== 1
              ) {
                problems.push(
                  `${generated.method} ${generated.target.slice(0, 200)}: error body ${answer.contentType} ${answer.body.slice(0, 200)}`,
                )
              }
            }
          })
          assert.deepEqual(problems, [])
        },
      ),
      // No shrinking: a batch fails through what its requests do together, which shrinking
      // would spend tens of thousands of requests to lose.
      { seed: SEED, numRuns: runs, endOnFailure: true },
    )
  } catch (error) {
    // The reporter shows the message, not the cause: the failed assertion is in the cause.
    const cause = (error as { cause?: unknown }).cause
    throw new Error(`${(error as Error).message.slice(0, 4000)}\ncause: ${String(cause)}`)
  } finally {
    agent.destroy()
  }
}

describe('generated bad requests over HTTP', () => {
  let fuzzed: Fuzzed
  let users: { sessionKey: string; openId: string }[]
  let before_: Record<string, unknown[]>

  before(async () => {
    fuzzed = await fuzzedService({}, UNLIMITED)
    const { stack } = fuzzed
    // Real users in every state a request could disturb: tier 1, tier 2, a pending code with its
    // mail, an opened link (a redirected attempt waiting for its callback).
    const tier2 = await registerUniversity(stack)
    const pending = await registerMessenger(stack)
    await requestConfirmationLink(stack, pending.sessionKey, 'pending@example.edu')
    const opened = await registerMessenger(stack)
    const link = await requestConfirmationLink(stack, opened.sessionKey, 'opened@example.edu')
    assert.equal((await openLink(link)).status, 301)
    const plain = await registerMessenger(stack)
    users = [tier2, pending, opened, plain]
    fuzzed.realKeys = users.map((user) => user.sessionKey)
    await outboxSettled(stack)
    before_ = await snapshot(stack)
  })
  after(() => fuzzed.stack.close())

  it(`answers ${BATCH * RUNS} generated requests with documented answers and no 5xx`, async (t) => {
    const sentBefore = figures.sent
    try {
      await sendGenerated(fuzzed, RUNS)
    } finally {
      t.diagnostic(
        `seed ${SEED}: ${figures.sent - sentBefore} generated requests sent, ${figures.serverErrors} answered 5xx, /readyz said not ready ${figures.notReady} times, ${figures.bodilessEdge} edge answers without a body`,
      )
      for (const sample of figures.samples) t.diagnostic(`5xx: ${sample}`)
    }
    assert.equal(figures.serverErrors, 0)
  })

  it('sends malformed requests over a raw socket and answers each in the vocabulary, no 5xx', async (t) => {
    await rawRequests(fuzzed, t)
  })

  it('answers an HTTP/1.1 request without Host 400 malformed-request, not with a bare 400', async () => {
    const answer = await rawRequest(fuzzed.stack.service.url, 'GET /session HTTP/1.1\r\n\r\n')
    assert.equal(answer.status, 400)
    assert.equal(answer.headers['content-type'], MEDIA_TYPE)
    assert.deepEqual(JSON.parse(answer.body), { error: '@bad-request/malformed-request' })
    assert.ok(answer.closed)
  })

  it('ignores an Expect it cannot meet rather than answering a bare 417', async () => {
    const answer = await rawRequest(
      fuzzed.stack.service.url,
      'GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\nConnection: close\r\n\r\n',
    )
    assert.equal(answer.status, 200)
    assert.deepEqual(JSON.parse(answer.body), { status: 'ok' })
  })

  it('answers a QUERY without Content-Type 400 malformed-request, not 500', async () => {
    for (const path of ['/session', '/nowhere']) {
      const answer = await rawRequest(
        fuzzed.stack.service.url,
        `QUERY ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
      )
      assert.equal(answer.status, 400, path)
      assert.deepEqual(JSON.parse(answer.body), { error: '@bad-request/malformed-request' })
    }
  })

  it('answers the callback 200 whatever its Accept, and a body sent to no route 404', async () => {
    const { url } = fuzzed.stack.service
    const callback = await fetch(`${url}/authorize/university/callback?state=x`, {
      headers: { accept: 'application/vnd.service.v2+json' },
    })
    assert.equal(callback.status, 200)
    const nowhere = await fetch(`${url}/nowhere`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'x',
    })
    assert.equal(nowhere.status, 404)
    assert.deepEqual(await nowhere.json(), { error: '@not-found/unknown-endpoint' })
  })

  it('created, changed and lost no session, user, code, attempt or outbox row', async () => {
    await outboxSettled(fuzzed.stack)
    assert.deepEqual(await snapshot(fuzzed.stack), before_)
    for (const [index, user] of users.entries()) {
      const session = await sessionOf(fuzzed.stack, user.sessionKey)
      assert.equal(session.status, 200, `user ${index}: ${session.text}`)
      assert.equal(session.body.openId, user.openId)
    }
    assert.equal(
      (await sessionOf(fuzzed.stack, users[0].sessionKey)).body.tier,
      'university-registered',
    )
  })
})

describe('generated bad requests with the per-address limits on', () => {
  let fuzzed: Fuzzed
  before(async () => {
    fuzzed = await fuzzedService(
      { RATE_LIMIT_PER_ADDRESS: '300', RATE_LIMIT_REGISTRATION_PER_ADDRESS: '40' },
      {},
    )
    fuzzed.realKeys = [(await registerMessenger(fuzzed.stack)).sessionKey]
  })
  after(() => fuzzed.stack.close())

  it('answers over the limit with documented answers and no 5xx', async (t) => {
    const sentBefore = figures.sent
    await sendGenerated(fuzzed, 12)
    t.diagnostic(
      `seed ${SEED}: ${figures.sent - sentBefore} generated requests sent with limits on`,
    )
    assert.equal(figures.serverErrors, 0)
  })
})

// ---- the raw socket ----------------------------------------------------------------------------

interface RawCase {
  bytes: string
  /** The connection is reset before the request is complete: no answer is due. */
  abort: boolean
}

// Connection: close, so an answered request does not hold its socket open until the idle timeout;
// kept open where garbage is pipelined behind the request.
const HEAD = (method: string, path: string, close = true) =>
  `${method} ${path} HTTP/1.1\r\nHost: x\r\n${close ? 'Connection: close\r\n' : ''}`
const rawPath = fc.constantFrom(
  '/register/messenger',
  '/register/university',
  '/session',
  '/logout',
  '/authorize/university?universityRegistrationCode=x',
  '/nowhere',
  '/user',
)

const rawCase: fc.Arbitrary<RawCase> = fc.oneof(
  // Bad request lines.
  fc
    .constantFrom(
      'GET\r\n\r\n',
      'GET / HTTP/9.9\r\nHost: x\r\n\r\n',
      'GET  /session HTTP/1.1\r\nHost: x\r\n\r\n',
      'get /session HTTP/1.1\r\nHost: x\r\n\r\n',
      'GET /session HTTP/1.1 extra\r\nHost: x\r\n\r\n',
      'GET /session\r\n\r\n',
      'GET /session HTTP/1.0\r\n\r\n',
      'GET session HTTP/1.1\r\nHost: x\r\n\r\n',
      'GET http://evil.example/session HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      'GET /ses\u0000sion HTTP/1.1\r\nHost: x\r\n\r\n',
      'G\u00c9T /session HTTP/1.1\r\nHost: x\r\n\r\n',
      '\r\n\r\nGET /session HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n',
    )
    .map((bytes) => ({ bytes, abort: false })),
  fc
    .string({ unit: 'binary', minLength: 1, maxLength: 200 })
    .map((text) => ({ bytes: `${text}\r\n\r\n`, abort: false })),
  // Bad header syntax, missing or doubled Host, obsolete folding, control characters.
  fc
    .tuple(
      rawPath,
      fc.constantFrom(
        'Host x\r\n',
        ' Leading: space\r\n',
        'Na me: v\r\n',
        'X: a\u0000b\r\n',
        'X: a\rb\r\n',
        'X: a\r\n folded\r\n',
        ': empty-name\r\n',
        'Host: y\r\n',
        'Authorization: a\r\nAuthorization: b\r\n',
        'Content-Type: application/json\r\nContent-Type: text/plain\r\n',
        'Accept: \u001b[31m\r\n',
        'X: \u00ff\u00fe\r\n',
        '__proto__: x\r\n',
      ),
    )
    .map(([path, line]) => ({ bytes: `${HEAD('GET', path)}${line}\r\n`, abort: false })),
  fc
    .constantFrom(
      'GET /session HTTP/1.1\r\n\r\n',
      'GET /session HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n',
    )
    .map((bytes) => ({ bytes, abort: false })),
  // Huge headers: one long line, many lines, a long URL.
  fc.integer({ min: 17_000, max: 70_000 }).map((n) => ({
    bytes: `${HEAD('GET', '/session')}X-Filler: ${'a'.repeat(n)}\r\n\r\n`,
    abort: false,
  })),
  fc.integer({ min: 200, max: 3000 }).map((n) => ({
    bytes: `${HEAD('GET', '/session')}${'X-A: b\r\n'.repeat(n)}\r\n`,
    abort: false,
  })),
  fc.integer({ min: 17_000, max: 40_000 }).map((n) => ({
    bytes: `GET /session?${'a'.repeat(n)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    abort: false,
  })),
  // Bad chunked encoding and request smuggling shapes.
  fc
    .tuple(
      rawPath,
      fc.constantFrom(
        'Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
        'Transfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFFFFF\r\n{}\r\n0\r\n\r\n',
        'Transfer-Encoding: chunked\r\n\r\n2;ext="\r\n{}\r\n0\r\n\r\n',
        'Transfer-Encoding: chunked\r\n\r\n2\r\n{}0\r\n\r\n',
        'Transfer-Encoding: chunked\r\n\r\n-2\r\n{}\r\n0\r\n\r\n',
        'Transfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n2\r\n{}\r\n0\r\n\r\n',
        'Transfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n',
        'Transfer-Encoding: chunked, identity\r\n\r\n2\r\n{}\r\n0\r\n\r\n',
        'Transfer-Encoding: xchunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n',
        'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n',
        'Content-Length: -1\r\n\r\n{}',
        'Content-Length: abc\r\n\r\n{}',
        'Content-Length: 2, 3\r\n\r\n{}',
        'Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
        'Content-Length: 99999999999999999999\r\n\r\n{}',
        'Content-Length: +2\r\n\r\n{}',
        'Content-Length: 0x2\r\n\r\n{}',
        'Content-Length: 0\r\n\r\n{"appId":"a","appSecret":"b","code":"c"}',
        // A body shorter than it says, then garbage pipelined behind a complete request.
        'Content-Length: 2\r\n\r\n{}GARBAGE / HTTP/1.1\r\n\r\n',
        'Content-Length: 2\r\n\r\n{}\r\n\r\n\u0000\u0001\u0002',
        'Content-Length: 2\r\n\r\n{}GET /session HTTP/1.1\r\nHost: x\r\n\r\nGET /%c0 HTTP/1.1\r\nHost: x\r\n\r\nBAD\r\n\r\n',
      ),
    )
    .map(([path, rest]) => ({
      bytes: `${HEAD('POST', path, false)}Content-Type: application/json\r\n${rest}`,
      abort: false,
    })),
  // Truncated bodies: the client goes away, or stops sending (answered 408 after REQUEST_TIMEOUT).
  fc
    .tuple(rawPath, fc.integer({ min: 10, max: 1000 }), fc.boolean())
    .map(([path, length, abort]) => ({
      bytes: `${HEAD('POST', path)}Content-Type: application/json\r\nContent-Length: ${length}\r\n\r\n{"appId":`,
      abort,
    })),
  fc.constantFrom(
    {
      bytes: `${HEAD('POST', '/register/messenger')}Transfer-Encoding: chunked\r\n\r\n5\r\n{"app`,
      abort: true,
    },
    { bytes: `${HEAD('GET', '/session')}Authorization: abc`, abort: true },
  ),
)

/** Statuses in every answer on the connection (pipelined requests get several). */
function statusesIn(text: string): number[] {
  return [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]))
}

async function rawRequests(
  fuzzed: Fuzzed,
  t: { diagnostic(message: string): void },
): Promise<void> {
  const { url } = fuzzed.stack.service
  let count = 0
  let serverErrors = 0
  await fc.assert(
    fc.asyncProperty(fc.array(rawCase, { minLength: 10, maxLength: 10 }), async (cases) => {
      const problems: string[] = []
      await inParallel(cases, 10, async ({ bytes, abort }) => {
        count += 1
        if (abort) {
          await abortedRequest(url, bytes)
          return
        }
        const answer = await rawRequest(url, Buffer.from(bytes, 'latin1'), { waitMs: 4000 })
        const all = statusesIn(
          `${answer.status ? `HTTP/1.1 ${answer.status} \r\n` : ''}${answer.body}`,
        )
        serverErrors += all.filter((status) => status >= 500).length
        const shown = JSON.stringify(bytes.slice(0, 160))
        if (answer.status === 0) problems.push(`${shown}: no answer`)
        else if (all.some((status) => status >= 500))
          problems.push(`${shown}: answered ${all.join(', ')}`)
        else if ((answer.status === 400 || answer.status === 431) && answer.body === '') {
          // The protocol edge's answer when the refused bytes do not show a method: no body.
        } else {
          const requestLine = bytes.trimStart().split('\r\n')[0].split(/ +/)
          const problem = undocumentedAnswer(
            fuzzed.document,
            {
              method: requestLine[0] ?? '',
              path: routedPath(requestLine[1] ?? ''),
              status: answer.status,
              code: errorCode({
                status: answer.status,
                contentType: undefined,
                body: answer.body.split(/HTTP\/1\.1 /)[0],
              }),
              hasBody: answer.body !== '',
            },
            HIDDEN,
          )
          if (problem !== null) problems.push(`${shown}: ${problem}`)
        }
      })
      assert.deepEqual(problems, [])
    }),
    { seed: SEED, numRuns: 20 },
  )
  figures.raw += count
  t.diagnostic(
    `seed ${SEED}: ${count} malformed requests over raw sockets, ${serverErrors} answered 5xx`,
  )
  assert.equal(serverErrors, 0)
}
