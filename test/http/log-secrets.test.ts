import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { SANDBOX_APP } from '../../src/sandbox/messenger.js'
import { userIdOf } from '../helpers/people.js'
import { cipherFor } from '../../src/secrets-at-rest.js'
import { ERROR_LEVEL, errorLines, logLines } from '../helpers/logs.js'
import { OIDC_CLIENT_SECRET } from '../helpers/oidc-provider.js'
import { oidcSignInAndReturn, oidcUserInBrowser, startOidcStack } from '../helpers/oidc-stack.js'
import { abortedRequest, rawRequest } from '../helpers/raw-http.js'
import { call, startService, type RunningService } from '../helpers/service.js'
import { recipients, linkIn, startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'
import {
  CLIENT_SECRET,
  codeOf,
  decideAtProvider,
  mintLoginCode,
  startStack,
  withParams,
  type Stack,
} from '../helpers/stack.js'

/** Strings that try to end a JSON log line and forge one, or repaint a terminal. */
const INJECTIONS = [
  '\n{"level":60,"msg":"forged"}\n',
  '\r\n{"level":50}',
  '\u001b[31mred\u001b[0m\u001b[2J',
  '"}],"level":60,"x":{"',
  '\u0000\u2028\u2029\ud800',
]

/** Forms in which a secret must not appear: as written, URL-encoded, and as its SHA-256. */
function formsOf(secret: string): string[] {
  const digest = createHash('sha256').update(secret).digest()
  return [
    secret,
    encodeURIComponent(secret),
    digest.toString('hex'),
    digest.toString('base64url'),
    digest.toString('base64'),
  ]
}

/** The same length and alphabet as `secret`, one character off: close to a real one, not it. */
function nearMiss(secret: string): string {
  const last = secret.at(-1) === 'A' ? 'B' : 'A'
  return secret.slice(0, -1) + last
}

/** Every line is JSON (no injection split one), and none carries a secret in any form. */
function assertClean(service: RunningService, secrets: string[]): void {
  const lines = logLines(service)
  assert.ok(lines.length > 0)
  const text = service.logs()
  for (const secret of secrets) {
    assert.ok(secret.length >= 16, `a weak stand-in for a secret: ${secret.slice(0, 4)}…`)
    for (const form of formsOf(secret)) {
      assert.ok(!text.includes(form), `a secret reached the log: ${secret.slice(0, 6)}…`)
    }
  }
  // Client values are never redaction patterns: nothing was blanked out.
  assert.ok(!text.includes('[redacted]'))
  assert.ok(lines.some((line) => line.msg === 'request completed' && line.level === 30))
  assert.deepEqual(errorLines(service), [])
}

/** Headers that carry `values` (secrets the attacker knows or guesses) where nobody expects them. */
function noisy(values: string[]): Record<string, string> {
  const joined = values.join(' ')
  return {
    'user-agent': `Mozilla/5.0 ${joined} "}{"level":60,"msg":"forged"}`,
    referer: `https://evil.example/?k=${encodeURIComponent(joined)}`,
    'x-forwarded-for': `${values[0] ?? '198.51.100.1'}, 203.0.113.9`,
    'x-api-key': joined,
    'x-request-id': `{"level":60}${joined}`,
  }
}

/** A query string with every value and injection in it. */
function noisyQuery(values: string[]): string {
  const params = new URLSearchParams()
  for (const value of [...values, ...INJECTIONS]) params.append('debug', value)
  return params.toString()
}

describe('no secret in the logs of a full flow with adversarial inputs (issue 15)', () => {
  const smtpAuth = {
    user: 'relay-user',
    pass: `smtp-pass-${randomBytes(18).toString('base64url')}`,
  }
  const dataKey = randomBytes(32).toString('base64')
  let smtp: SmtpSink
  let stack: Stack

  before(async () => {
    smtp = await startSmtpSink(0, { auth: smtpAuth })
    const base = await startStack(
      { SMTP_URL: smtp.url, DATA_ENCRYPTION_KEY: dataKey },
      {
        extend: (app) => {
          app.get(
            '/app/forum',
            { onRequest: app.requireTier('university-registered') },
            async () => ({ posts: [] }),
          )
        },
      },
    )
    stack = { ...base, smtp }
  })
  after(async () => {
    await stack.close()
    await smtp.stop()
  })

  it('uclapi: register, link, callback, session, app route, logout, re-register, erase', async () => {
    const url = stack.service.url
    const secrets: string[] = [SANDBOX_APP.appSecret, CLIENT_SECRET, smtpAuth.pass, dataKey]
    const { cipher } = cipherFor(stack.service.config)

    // Client values equal to words of the log lines, as appSecret and code.
    for (const [appSecret, code] of [
      ['request completed', 'info'],
      ['info', 'level'],
      ['msg', 'request completed'],
      ['"level":30', '30'],
    ]) {
      const answer = await call(`${url}/register/messenger`, {
        method: 'POST',
        json: { appId: SANDBOX_APP.appId, appSecret, code },
      })
      assert.ok(answer.status >= 400 && answer.status < 500, answer.text)
    }

    // Register, with the code and app secret also sprayed over headers, query and body.
    const login = await mintLoginCode(stack)
    secrets.push(login.code)
    const spray = [login.code, SANDBOX_APP.appSecret]
    for (const code of [nearMiss(login.code), `${login.code}\n`, ...INJECTIONS]) {
      const answer = await call(`${url}/register/messenger?${noisyQuery(spray)}`, {
        method: 'POST',
        headers: noisy(spray),
        json: { appId: SANDBOX_APP.appId, appSecret: SANDBOX_APP.appSecret, code },
      })
      assert.ok(answer.status >= 400 && answer.status < 500, answer.text)
    }
    const registered = await call(`${url}/register/messenger?${noisyQuery(spray)}`, {
      method: 'POST',
      headers: { ...noisy(spray), cookie: `code=${login.code}; secret=${SANDBOX_APP.appSecret}` },
      json: {
        appId: SANDBOX_APP.appId,
        appSecret: SANDBOX_APP.appSecret,
        code: login.code,
        note: INJECTIONS.join(''),
        echo: login.code,
      },
    })
    assert.equal(registered.status, 200, registered.text)
    const sessionKey = registered.body.sessionKey as string
    secrets.push(sessionKey)
    const user = await stack.service.db.kysely
      .selectFrom('identities')
      .select('secret as messenger_session_key')
      .where('subject', '=', login.openId)
      .executeTakeFirstOrThrow()
    const messengerSessionKey = cipher.decrypt(user.messenger_session_key!)
    secrets.push(messengerSessionKey)

    // Ask for the email; keys close to the real one and injected addresses first.
    const auth = { authorization: sessionKey }
    const keySpray = [sessionKey, messengerSessionKey, login.code]
    for (const authorization of [nearMiss(sessionKey), `Bearer ${nearMiss(sessionKey)}`]) {
      const answer = await call(`${url}/register/university`, {
        method: 'POST',
        headers: { ...noisy(keySpray), authorization },
        json: { email: 'student@example.edu' },
      })
      assert.equal(answer.status, 401)
    }
    for (const email of INJECTIONS.map((value) => `a${value}@example.edu`)) {
      const answer = await call(`${url}/register/university?${noisyQuery(keySpray)}`, {
        method: 'POST',
        headers: { ...noisy(keySpray), ...auth },
        json: { email },
      })
      assert.equal(answer.status, 400, answer.text)
    }
    const email = 'log-secrets@example.edu'
    const asked = await call(`${url}/register/university?${noisyQuery(keySpray)}`, {
      method: 'POST',
      headers: { ...noisy(keySpray), ...auth, cookie: `session=${sessionKey}` },
      json: { email, extra: sessionKey },
    })
    assert.equal(asked.status, 200, asked.text)
    const link = linkIn(await smtp.waitFor((mail) => recipients(mail).includes(email), 15_000))
    secrets.push(link, codeOf(link))

    // Open the link, after a near miss and a session key in its place.
    const linkSpray = [codeOf(link), link, sessionKey]
    for (const code of [nearMiss(codeOf(link)), sessionKey, `${codeOf(link)}${INJECTIONS[0]}`]) {
      const wrong = await fetch(
        `${url}/authorize/university?universityRegistrationCode=${encodeURIComponent(code)}`,
        { redirect: 'manual', headers: noisy(linkSpray) },
      )
      await wrong.arrayBuffer()
      assert.ok(wrong.status >= 400 && wrong.status < 500)
    }
    const opened = await fetch(`${link}&${noisyQuery(linkSpray)}`, {
      redirect: 'manual',
      headers: { ...noisy(linkSpray), accept: 'text/html' },
    })
    await opened.arrayBuffer()
    assert.equal(opened.status, 301)
    const cookie = (opened.headers.get('set-cookie') ?? '').split(';')[0]
    const cookieValue = cookie.slice(cookie.indexOf('=') + 1)
    secrets.push(cookieValue)

    // The provider's answer, and forged or mangled callbacks without the browser's cookie.
    const callback = await decideAtProvider(stack, login.openId, 'allow')
    const providerCode = new URL(callback).searchParams.get('code')!
    secrets.push(providerCode)
    const callbackSpray = [providerCode, cookieValue, CLIENT_SECRET, sessionKey]
    for (const forged of [
      withParams(callback, { code: nearMiss(providerCode) }),
      withParams(callback, { code: sessionKey, client_secret: nearMiss(CLIENT_SECRET) }),
      withParams(callback, { client_id: INJECTIONS[0], code: INJECTIONS[2] }),
      withParams(callback, { result: INJECTIONS[1] }),
      callback,
    ]) {
      const refused = await fetch(forged, {
        headers: {
          ...noisy(callbackSpray),
          cookie: `${cookie.split('=')[0]}=${nearMiss(cookieValue)}`,
        },
      })
      assert.equal(refused.status, 200)
      await refused.arrayBuffer()
    }
    const done = await fetch(callback, {
      redirect: 'manual',
      headers: {
        ...noisy(callbackSpray),
        accept: 'text/html',
        cookie: `${cookie}; other=${providerCode}`,
      },
    })
    assert.equal(done.status, 200)
    assert.match(await done.text(), /linked/i)
    const linked = await stack.service.db.kysely
      .selectFrom('identities')
      .select('secret as university_token')
      .where('kind', '=', 'university')
      .where('user_id', '=', await userIdOf(stack.service.db.kysely, login.openId))
      .executeTakeFirstOrThrow()
    const token = cipher.decrypt(linked.university_token!)
    assert.match(token, /^uclapi-sandbox-/)
    secrets.push(token)

    // The session, an app route behind requireTier, with every secret known so far around them.
    const everything = [sessionKey, token, providerCode, cookieValue, messengerSessionKey]
    const session = await call(`${url}/session?${noisyQuery(everything)}`, {
      headers: { ...noisy(everything), ...auth },
    })
    assert.equal(session.status, 200)
    assert.equal(session.body.tier, 'university-registered')
    assert.equal((await call(`${url}/app/forum`, { headers: noisy(everything) })).status, 403)
    const forum = await call(`${url}/app/forum?${noisyQuery(everything)}`, {
      headers: { ...noisy(everything), authorization: `Bearer ${sessionKey}` },
    })
    assert.equal(forum.status, 200)
    for (const authorization of [nearMiss(sessionKey), token, messengerSessionKey]) {
      assert.equal(
        (await call(`${url}/app/forum`, { headers: { ...noisy(everything), authorization } }))
          .status,
        401,
      )
    }

    // Log out, register again, erase.
    const loggedOut = await call(`${url}/logout?${noisyQuery(everything)}`, {
      method: 'POST',
      headers: { ...noisy(everything), ...auth },
    })
    assert.equal(loggedOut.status, 200, loggedOut.text)
    const again = await mintLoginCode(stack, login.openId)
    secrets.push(again.code)
    const reRegistered = await call(`${url}/register/messenger`, {
      method: 'POST',
      headers: noisy([again.code, sessionKey]),
      json: { appId: SANDBOX_APP.appId, appSecret: SANDBOX_APP.appSecret, code: again.code },
    })
    assert.equal(reRegistered.status, 200, reRegistered.text)
    const secondKey = reRegistered.body.sessionKey as string
    secrets.push(secondKey)
    const erased = await call(`${url}/user?${noisyQuery([secondKey, sessionKey])}`, {
      method: 'DELETE',
      headers: { ...noisy([secondKey, sessionKey]), authorization: secondKey },
    })
    assert.equal(erased.status, 200, erased.text)

    assertClean(stack.service, secrets)
  })
})

describe('no secret in the logs of an OpenID Connect round trip (issue 15)', () => {
  it('leaves out the client secret, codes, cookie, session key and tokens', async () => {
    const stack = await startOidcStack({ DATA_ENCRYPTION_KEY: randomBytes(32).toString('base64') })
    try {
      const user = await oidcUserInBrowser(stack, 'oidc-logs@example.edu')
      const cookieValue = user.cookie.slice(user.cookie.indexOf('=') + 1)
      const { callback, done } = await oidcSignInAndReturn(stack, user, { member: 'bob' })
      assert.equal(done.status, 200)
      const providerCode = new URL(callback).searchParams.get('code')!
      // A replay with the code in other places too: refused, and quiet about it.
      const replay = await fetch(`${callback}&again=${providerCode}`, {
        headers: { ...noisy([providerCode, cookieValue]), cookie: user.cookie },
      })
      await replay.arrayBuffer()
      const row = await stack.service.db.kysely
        .selectFrom('identities')
        .select('secret')
        .where('user_id', '=', await userIdOf(stack.service.db.kysely, user.openId))
        .execute()
      const { cipher } = cipherFor(stack.service.config)
      const secrets = [
        OIDC_CLIENT_SECRET,
        user.sessionKey,
        codeOf(user.link),
        user.link,
        cookieValue,
        providerCode,
        ...row.map((identity) => cipher.decrypt(identity.secret!)),
      ]
      assertClean(stack.service, secrets)
    } finally {
      await stack.close()
    }
  })
})

const postHead = (length: number, type = 'application/json') =>
  'POST /register/messenger HTTP/1.1\r\nHost: x\r\n' +
  `Content-Type: ${type}\r\nContent-Length: ${length}\r\n\r\n`

describe('clients cannot write error-level log lines (issue 15)', () => {
  let service: RunningService
  before(async () => {
    service = await startService({
      REQUEST_TIMEOUT: '1s',
      // Room for the barrage on the registration routes; the loop at the end goes over it.
      RATE_LIMIT_REGISTRATION_PER_ADDRESS: '40',
    })
  })
  after(() => service.close())

  it('writes nothing above warn for bad, aborted, malformed, oversized, unknown, unauthorised and limited requests', async (t) => {
    const url = service.url
    const statuses: number[] = []
    const send = async (path: string, init: RequestInit & { json?: unknown } = {}) =>
      statuses.push((await call(`${url}${path}`, init)).status)

    // Bad bodies and media types.
    for (const json of [{}, { appId: 1 }, { appId: [], appSecret: {}, code: null }, []]) {
      await send('/session', { method: 'POST', json })
      await send('/register/university', { method: 'POST', json })
    }
    for (const [type, body] of [
      ['text/plain', 'hello'],
      ['application/xml', '<a/>'],
      ['application/json', '{"appId":'],
      ['application/json', '\u001b[31m{"level":60}'],
      ['application/json; charset=latin-7', '{}'],
      ['multipart/form-data; boundary=x', '--x--'],
    ] as const) {
      await send('/register/messenger', { method: 'POST', headers: { 'content-type': type }, body })
    }
    await send('/register/messenger', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ appId: 'a'.repeat(40_000) }),
    })
    // Unknown paths, methods and versions; bad keys.
    for (const path of [
      '/nope',
      '/..%2f..%2fetc/passwd',
      `/session/${'x'.repeat(4000)}`,
      '/%e2%80',
    ]) {
      await send(path)
    }
    for (const method of ['PUT', 'PATCH', 'OPTIONS', 'HEAD']) {
      await send('/session', { method })
    }
    await send('/session', { headers: { accept: 'application/vnd.service.v2+json' } })
    for (const authorization of ['x', 'Bearer ', `Bearer ${'A'.repeat(6000)}`, '\u00ff\u00fe']) {
      await send('/session', { headers: { authorization } })
      await send('/user', { method: 'DELETE', headers: { authorization } })
    }
    for (const query of [
      '',
      '?universityRegistrationCode=',
      '?universityRegistrationCode=x&universityRegistrationCode=y',
    ]) {
      await send(`/authorize/university${query}`)
    }
    await send(
      `/authorize/university/callback?code=%00%1b&state=${encodeURIComponent(INJECTIONS[0])}`,
    )

    // Malformed over a raw socket, and bodies cut off or never finished.
    const raw = [
      'HELLO THERE\r\n\r\n',
      'GET /%c0 HTTP/1.1\r\nHost: x\r\n\r\n',
      'GET /session HTTP/1.1\r\nHost: x\r\nX-A: \u001b[31m\r\n\r\n',
      'GET /session HTTP/1.1\r\nHost: x\r\nX-A: a\nX-B: b\r\n\r\n',
      `GET /session HTTP/1.1\r\nHost: x\r\nX-Filler: ${'a'.repeat(20_000)}\r\n\r\n`,
      `${postHead(5)}{}`.replace('Content-Length: 5', 'Content-Length: 5\r\nContent-Length: 6'),
      'POST /register/messenger HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        'Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
      'POST /register/messenger HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        'Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n',
      `${postHead(100)}{"appId":`,
      'GET /session HTTP/1.1\r\nHost: x\r\n',
      'GET / HTTP/9.9\r\n\r\n',
      'TRACE /session HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      'FOO /session HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
    ]
    for (const request of raw)
      statuses.push((await rawRequest(url, request, { waitMs: 3000 })).status)
    const before = service.logs().length
    for (const request of [
      `${postHead(100)}{"appId":`,
      postHead(10_000_000),
      `${postHead(50_000)}${'a'.repeat(20_000)}`,
      'GET /session HTTP/1.1\r\nHost: x\r\nAuthorization: ',
    ]) {
      await abortedRequest(url, request)
    }
    for (let i = 0; i < 300 && !service.logs().slice(before).includes('request-aborted'); i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }

    // Over the registration limit.
    for (let i = 0; i < 45; i += 1) {
      await send('/register/messenger', {
        method: 'POST',
        json: { appId: 'a', appSecret: 'b', code: 'c' },
      })
    }
    assert.ok(statuses.includes(429))
    assert.ok(!statuses.some((status) => status >= 500), JSON.stringify(statuses))

    const levels: Record<number, number> = {}
    for (const line of logLines(service)) levels[line.level] = (levels[line.level] ?? 0) + 1
    const seen: Record<number, number> = {}
    for (const status of statuses) seen[status] = (seen[status] ?? 0) + 1
    t.diagnostic(`statuses ${JSON.stringify(seen)}; log lines by level ${JSON.stringify(levels)}`)
    assert.deepEqual(
      errorLines(service).map((line) => `${line.level} ${line.msg}`),
      [],
      `levels ≥ ${ERROR_LEVEL} written`,
    )
  })
})
