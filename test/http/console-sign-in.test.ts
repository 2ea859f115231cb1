import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { loadConfig } from '../../src/config.js'
import { hashSecret } from '../../src/lib/secrets.js'
import { TestClock } from '../helpers/clock.js'
import {
  campusgate,
  consoleLink,
  describeLink,
  fromConsole,
  getPage,
  postForm,
  postSignIn,
  signIn,
  startSecondInstance,
  TEST_KEY,
} from '../helpers/console.js'
import { call, startService, type RunningService } from '../helpers/service.js'
import { registerMessenger, sessionOf, startStack, type Stack } from '../helpers/stack.js'

const MINUTE = 60_000
const ENV = { DATA_ENCRYPTION_KEY: TEST_KEY }

async function auditTypes(service: RunningService): Promise<{ type: string; actor: string }[]> {
  return service.db.kysely
    .selectFrom('audit_events')
    .select(['type', 'actor'])
    .where('actor', 'like', 'console%')
    .orderBy('at')
    .orderBy('id')
    .execute()
}

describe('the operator console: signing in and out', () => {
  let service: RunningService

  before(async () => {
    service = await startService(ENV, {
      clock: new TestClock(Date.now()),
      tweak: (config) => ({ ...config, rateLimit: { ...config.rateLimit, sensitiveMax: 1000 } }),
    })
  })
  after(() => service.close())

  it('prints a sign-in address whose 256-bit token is in the fragment and stored only hashed', async () => {
    const { address, token } = await consoleLink(service, 'alice')
    assert.match(
      address,
      new RegExp(
        `^${service.config.server.publicBaseUrl}/console/sign-in#token=[A-Za-z0-9_-]{43}$`,
      ),
    )
    assert.equal(Buffer.from(token, 'base64url').length, 32)
    const rows = await service.db.kysely.selectFrom('console_sign_in_tokens').selectAll().execute()
    const row = rows.find((candidate) => candidate.token_hash === hashSecret(token))
    assert.ok(row, 'the hash is stored')
    assert.equal(row.operator, 'alice')
    assert.ok(!JSON.stringify(rows).includes(token), 'the token itself is not')
  })

  it('signs in with the link: 303 to /console and the cookie named and flagged as docs/console.md says', async () => {
    const { token } = await consoleLink(service)
    const answer = await postSignIn(service, { token })
    assert.equal(answer.status, 303)
    assert.equal(answer.headers.get('location'), '/console')
    const header = answer.headers.get('set-cookie') ?? ''
    const [pair, ...attributes] = header.split(';').map((part) => part.trim())
    assert.match(pair, /^campusgate-console=[A-Za-z0-9_-]{43}$/)
    assert.deepEqual(attributes.map((part) => part.split('=')[0].toLowerCase()).sort(), [
      'httponly',
      'max-age',
      'path',
      'samesite',
    ])
    assert.ok(attributes.includes('Path=/'))
    assert.ok(attributes.includes('SameSite=Strict'))
    assert.ok(attributes.includes('Max-Age=28800'))
    const value = pair.split('=')[1]
    const sessions = await service.db.kysely.selectFrom('console_sessions').selectAll().execute()
    assert.ok(sessions.some((row) => row.token_hash === hashSecret(value)))
    assert.ok(!JSON.stringify(sessions).includes(value), 'the cookie is stored only hashed')
    const overview = await getPage(`${service.url}/console`, pair)
    assert.equal(overview.status, 200)
  })

  it('refuses a link used once already with 401 and a page saying so', async () => {
    const { token } = await consoleLink(service)
    await signIn(service, token)
    const again = await postSignIn(service, { token })
    assert.equal(again.status, 401)
    assert.match(again.text, /invalid or used/)
    assert.equal(again.headers.get('set-cookie'), null)
  })

  it('never signs in by itself: without a link the page has no button, only how to get a link', async () => {
    const page = await getPage(`${service.url}/console/sign-in`, null)
    assert.equal(page.status, 200)
    assert.doesNotMatch(page.text, /<button/, 'no button to press')
    assert.match(page.text, /<h2>How to get a sign-in link<\/h2>/)
    assert.match(page.text, /campusgate console link --name YOUR-NAME/)
    assert.match(
      page.text,
      /<form method="post" action="\/console\/sign-in" id="sign-in"[^>]* hidden>/,
    )
    assert.equal(page.headers.get('set-cookie'), null)
  })

  it('says whom a link signs in as without spending it, in the page language, from this origin only', async () => {
    const { token } = await consoleLink(service, 'dora', 'viewer')
    const asked = await describeLink(service, token)
    assert.equal(asked.status, 200, asked.text)
    assert.match(asked.headers.get('content-type') ?? '', /^application\/json/)
    const body = JSON.parse(asked.text) as Record<string, unknown>
    assert.equal(body.operator, 'dora')
    assert.equal(body.role, 'viewer')
    assert.equal(body.button, 'Sign in as dora (viewer)')
    assert.equal(body.switching, null)
    assert.equal(asked.headers.get('set-cookie'), null)
    const zh = await describeLink(service, token, {}, '?lang=zh-CN')
    assert.equal(JSON.parse(zh.text).button, '以 dora（只读查看者）身份登录')
    // Asked from another site: refused, and the link is still unused.
    for (const headers of <Record<string, string>[]>[
      { origin: 'https://evil.example' },
      { origin: 'null', 'sec-fetch-site': 'cross-site' },
    ]) {
      const answer = await describeLink(service, token, headers)
      assert.equal(answer.status, 403, JSON.stringify(headers))
      assert.deepEqual(JSON.parse(answer.text), { error: '@forbidden/csrf-check-failed' })
    }
    assert.equal((await postSignIn(service, { token })).status, 303, 'the link was not spent')
    const used = await describeLink(service, token)
    assert.equal(used.status, 401)
    assert.match(JSON.parse(used.text).message, /invalid or used/)
  })

  it('says when signing in would switch this browser to another operator, and ends the session it held', async () => {
    const alice = await signIn(service, (await consoleLink(service, 'alice')).token)
    const held = await getPage(`${service.url}/console/sign-in`, alice.cookie)
    assert.match(held.text, /This browser is signed in as alice \(admin\)\./)
    const { token } = await consoleLink(service, 'bob')
    const asked = await describeLink(service, token, { cookie: alice.cookie })
    assert.equal(
      JSON.parse(asked.text).switching,
      'This browser is signed in as alice (admin). Signing in as bob (admin) ends that session and switches this browser to bob (admin).',
    )
    const switched = await postSignIn(service, { token }, { cookie: alice.cookie })
    assert.equal(switched.status, 303)
    assert.equal((await getPage(`${service.url}/console`, alice.cookie)).status, 303)
    const [ended] = await service.db.kysely
      .selectFrom('audit_events')
      .select(['actor', 'detail'])
      .where('type', '=', 'console-sign-out')
      .orderBy('at', 'desc')
      .orderBy('id', 'desc')
      .execute()
    assert.equal(ended.actor, 'console:alice')
    assert.deepEqual(JSON.parse(ended.detail ?? '{}'), { reason: 'switched', to: 'bob' })
  })

  it('answers every console URL without a session 303 to /console/sign-in, naming the page asked for', async () => {
    const unknown = ['/no-such-page', '/users/someone/nothing']
    for (const path of ['', '/users', '/users/someone', '/events', '/mail', '/audit', ...unknown]) {
      const answer = await getPage(`${service.url}/console${path}`, null)
      assert.equal(answer.status, 303, path)
      const location = new URL(answer.headers.get('location') ?? '', 'http://x.invalid')
      assert.equal(location.pathname, '/console/sign-in', path)
      assert.equal(location.searchParams.get('next'), path === '' ? null : `/console${path}`)
    }
    const post = await postForm(`${service.url}/console/users/someone/erase`, {
      confirm: 'someone',
    })
    assert.equal(post.status, 303)
    assert.equal(post.headers.get('location'), '/console/sign-in')
    const page = await getPage(`${service.url}/console/sign-in`, null)
    assert.equal(page.status, 200)
    assert.match(page.text, /campusgate console link/)
  })

  it('returns to the page asked for after sign-in, in its language', async () => {
    const asked = await getPage(`${service.url}/console/audit?type=logout&lang=zh-CN`, null)
    const location = asked.headers.get('location') ?? ''
    assert.equal(
      location,
      '/console/sign-in?next=%2Fconsole%2Faudit%3Ftype%3Dlogout%26lang%3Dzh-CN&lang=zh-CN',
    )
    const page = await getPage(`${service.url}${location}`, null)
    assert.match(page.text, /<html lang="zh-CN">/)
    assert.match(
      page.text,
      /name="next" id="next" value="\/console\/audit\?type=logout&amp;lang=zh-CN"/,
    )
    const { token } = await consoleLink(service)
    const answer = await postSignIn(service, {
      token,
      next: '/console/audit?type=logout&lang=zh-CN',
    })
    assert.equal(answer.status, 303)
    assert.equal(answer.headers.get('location'), '/console/audit?type=logout&lang=zh-CN')
  })

  it('refuses every return target that is not a console path of this origin', async () => {
    const tricks = [
      'https://evil.example/console',
      '//evil.example/console',
      '/\\evil.example/console',
      '\\evil.example',
      '/console/../evil',
      '/console/%2e%2e/%2e%2e/evil',
      '/consolex',
      '/console@evil.example',
      'javascript:alert(1)',
      '/console/\nLocation: https://evil.example',
      '/console/sign-in',
      'http://localhost/console',
    ]
    for (const next of tricks) {
      const { token } = await consoleLink(service)
      const answer = await postSignIn(service, { token, next })
      assert.equal(answer.status, 303, next)
      assert.equal(answer.headers.get('location'), '/console', next)
      const page = await getPage(
        `${service.url}/console/sign-in?next=${encodeURIComponent(next)}`,
        null,
      )
      assert.match(page.text, /name="next" id="next" value=""/, next)
    }
  })

  it('refuses a sign-in POST from another origin with 403 csrf-check-failed and spends no link', async () => {
    const { token } = await consoleLink(service)
    for (const headers of <Record<string, string>[]>[
      { origin: 'https://evil.example' },
      { origin: 'null', 'sec-fetch-site': 'cross-site' },
      {},
    ]) {
      const answer = await postForm(`${service.url}/console/sign-in`, { token }, headers)
      assert.equal(answer.status, 403, JSON.stringify(headers))
      assert.match(answer.text, /@forbidden\/csrf-check-failed/)
      assert.equal(answer.headers.get('set-cookie'), null)
    }
    assert.equal((await postSignIn(service, { token })).status, 303, 'the link is still unused')
  })

  it('answers an address under /console that names no page 404 to a signed-in operator, as a console page', async () => {
    const session = await signIn(service, (await consoleLink(service)).token)
    const answer = await getPage(`${service.url}/console/no-such-page`, session.cookie)
    assert.equal(answer.status, 404)
    assert.match(answer.text, /No such page/)
  })

  it('signs out: the cookie is cleared and no longer opens anything', async () => {
    const session = await signIn(service, (await consoleLink(service)).token)
    const out = await fromConsole(service, session, '/console/sign-out')
    assert.equal(out.status, 303)
    assert.equal(out.headers.get('location'), '/console/sign-in')
    assert.match(out.headers.get('set-cookie') ?? '', /^campusgate-console=;/)
    assert.equal((await getPage(`${service.url}/console`, session.cookie)).status, 303)
    // In the language the console was used in.
    const zh = await signIn(service, (await consoleLink(service)).token)
    const outZh = await fromConsole(service, zh, '/console/sign-out?lang=zh-CN')
    assert.equal(outZh.headers.get('location'), '/console/sign-in?lang=zh-CN')
  })

  it('sends pages with a CSP that forbids inline script and style and other origins, DENY and same-origin', async () => {
    const session = await signIn(service, (await consoleLink(service)).token)
    for (const [path, cookie] of [
      ['/console/sign-in', null],
      ['/console', session.cookie],
      ['/console/users?q=nobody', session.cookie],
      ['/console/events', session.cookie],
      ['/console/mail', session.cookie],
      ['/console/audit', session.cookie],
    ] as const) {
      const page = await getPage(`${service.url}${path}`, cookie)
      assert.equal(page.status, 200, path)
      const csp = page.headers.get('content-security-policy') ?? ''
      assert.equal(
        csp,
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
          "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
      )
      assert.doesNotMatch(csp, /unsafe-inline|https?:/)
      assert.equal(page.headers.get('x-frame-options'), 'DENY')
      assert.equal(page.headers.get('referrer-policy'), 'same-origin')
      assert.doesNotMatch(page.text, /<script(?![^>]*\bsrc=)/, `${path}: no inline script`)
      assert.doesNotMatch(
        page.text,
        /<style|\sstyle=|\son[a-z]+=/i,
        `${path}: no inline style or handler`,
      )
    }
  })

  it('audits every sign-in, refused sign-in and sign-out, naming the operator', async () => {
    const session = await signIn(service, (await consoleLink(service, 'carol')).token)
    await postSignIn(service, { token: 'nope' })
    await fromConsole(service, session, '/console/sign-out')
    const events = await auditTypes(service)
    const tail = events.slice(-3)
    assert.deepEqual(tail, [
      { type: 'console-sign-in', actor: 'console:carol' },
      { type: 'console-sign-in-refused', actor: 'console' },
      { type: 'console-sign-out', actor: 'console:carol' },
    ])
  })
})

describe('the operator console: time', () => {
  it('refuses an unknown token and a link older than 10 minutes', async () => {
    const service = await startService(ENV, { clock: new TestClock(Date.now()) })
    try {
      const unknown = await postSignIn(service, { token: 'x'.repeat(43) })
      assert.equal(unknown.status, 401)
      const { token } = await consoleLink(service)
      // The link's command ran on the system clock, a while after the service's clock was set.
      service.clock.advance(Date.now() - service.clock.now().getTime() + 10 * MINUTE + 1000)
      const late = await postSignIn(service, { token })
      assert.equal(late.status, 401)
      assert.match(late.text, /invalid or used/)
    } finally {
      await service.close()
    }
  })

  it('ends a session after 30 idle minutes', async () => {
    const service = await startService(ENV, { clock: new TestClock(Date.now()) })
    try {
      const idle = await signIn(service, (await consoleLink(service)).token)
      service.clock.advance(29 * MINUTE)
      assert.equal((await getPage(`${service.url}/console/users`, idle.cookie)).status, 200)
      service.clock.advance(29 * MINUTE)
      assert.equal((await getPage(`${service.url}/console/users`, idle.cookie)).status, 200)
      service.clock.advance(30 * MINUTE + 1000)
      assert.equal((await getPage(`${service.url}/console/users`, idle.cookie)).status, 303)
    } finally {
      await service.close()
    }
  })

  it('ends a session 8 hours after sign-in however busy', async () => {
    const service = await startService(ENV, { clock: new TestClock(Date.now()) })
    try {
      const busy = await signIn(service, (await consoleLink(service)).token)
      for (let minutes = 0; minutes < 8 * 60 - 20; minutes += 20) {
        service.clock.advance(20 * MINUTE)
        assert.equal((await getPage(`${service.url}/console/users`, busy.cookie)).status, 200)
      }
      service.clock.advance(21 * MINUTE)
      assert.equal((await getPage(`${service.url}/console/users`, busy.cookie)).status, 303)
    } finally {
      await service.close()
    }
  })
})

describe('the operator console: requests from elsewhere', () => {
  let service: RunningService

  before(async () => {
    service = await startService(ENV, { clock: new TestClock(Date.now()) })
  })
  after(() => service.close())

  it('refuses a state-changing request without the CSRF token or from another origin with 403', async () => {
    const session = await signIn(service, (await consoleLink(service)).token)
    const origin = new URL(service.url).origin
    const refused = [
      // No token.
      postForm(`${service.url}/console/sign-out`, {}, { cookie: session.cookie, origin }),
      // A wrong token.
      postForm(
        `${service.url}/console/sign-out`,
        { csrf: 'x'.repeat(43) },
        { cookie: session.cookie, origin },
      ),
      // Another origin.
      fromConsole(service, session, '/console/sign-out', {}, { origin: 'https://evil.example' }),
      // Origin: null with a cross-site fetch.
      fromConsole(
        service,
        session,
        '/console/sign-out',
        {},
        { origin: 'null', 'sec-fetch-site': 'cross-site' },
      ),
      // No Origin and no Sec-Fetch-Site.
      postForm(
        `${service.url}/console/sign-out`,
        { csrf: session.csrf },
        { cookie: session.cookie },
      ),
    ]
    for (const answer of await Promise.all(refused)) {
      assert.equal(answer.status, 403, answer.text)
      assert.match(answer.text, /@forbidden\/csrf-check-failed/)
      assert.match(answer.headers.get('content-type') ?? '', /^text\/html/)
    }
    const json = await fromConsole(
      service,
      session,
      '/console/sign-out',
      {},
      {
        origin: 'https://evil.example',
        accept: 'application/json',
      },
    )
    assert.equal(json.status, 403)
    assert.deepEqual(JSON.parse(json.text), { error: '@forbidden/csrf-check-failed' })
    // Still signed in: nothing was done.
    assert.equal((await getPage(`${service.url}/console`, session.cookie)).status, 200)
  })

  it('takes Sec-Fetch-Site: same-origin where the browser sends Origin: null or none', async () => {
    for (const headers of <Record<string, string>[]>[
      { origin: 'null', 'sec-fetch-site': 'same-origin' },
      { 'sec-fetch-site': 'same-origin' },
    ]) {
      const session = await signIn(service, (await consoleLink(service)).token)
      const answer = await postForm(
        `${service.url}/console/sign-out`,
        { csrf: session.csrf },
        { cookie: session.cookie, ...headers },
      )
      assert.equal(answer.status, 303, JSON.stringify(headers))
    }
  })

  it("refuses another session's CSRF token", async () => {
    const mine = await signIn(service, (await consoleLink(service)).token)
    const theirs = await signIn(service, (await consoleLink(service)).token)
    const answer = await fromConsole(service, { ...mine, csrf: theirs.csrf }, '/console/sign-out')
    assert.equal(answer.status, 403)
  })
})

describe('the operator console and session keys', () => {
  let stack: Stack

  before(async () => {
    stack = await startStack(ENV, { clock: new TestClock(Date.now()) })
  })
  after(() => stack.close())

  it('no session key opens the console and no console cookie passes the tier guard', async () => {
    const { sessionKey } = await registerMessenger(stack)
    const withKey = await getPage(`${stack.service.url}/console`, null, {
      authorization: sessionKey,
    })
    assert.equal(withKey.status, 303)
    assert.equal(withKey.headers.get('location'), '/console/sign-in')
    const asCookie = await getPage(
      `${stack.service.url}/console`,
      `campusgate-console=${sessionKey}`,
    )
    assert.equal(asCookie.status, 303)

    const session = await signIn(stack.service, (await consoleLink(stack.service)).token)
    const withCookie = await call(`${stack.service.url}/session`, {
      headers: { cookie: session.cookie },
    })
    assert.equal(withCookie.status, 403)
    assert.deepEqual(withCookie.body, { error: '@forbidden/missing-authorization-header' })
    const value = session.cookie.split('=')[1]
    const cookieAsKey = await call(`${stack.service.url}/session`, {
      headers: { authorization: value },
    })
    assert.equal(cookieAsKey.status, 401)
    assert.deepEqual(cookieAsKey.body, { error: '@unauthorized/invalid-session-key' })
  })
})

describe('the operator console across instances and by configuration', () => {
  it('honours a session on every instance, and a sign-out or revoke ends it on all of them', async () => {
    const service = await startService(ENV, { clock: new TestClock(Date.now()) })
    const second = await startSecondInstance(service)
    try {
      const origin = { origin: new URL(service.url).origin }
      const alice = await signIn(service, (await consoleLink(service, 'alice')).token)
      assert.equal((await getPage(`${second.url}/console`, alice.cookie)).status, 200)
      // Signed out on the second instance: the first refuses it too.
      const out = await fromConsole(second, alice, '/console/sign-out', {}, origin)
      assert.equal(out.status, 303)
      assert.equal((await getPage(`${service.url}/console`, alice.cookie)).status, 303)

      const bob = await signIn(service, (await consoleLink(service, 'bob')).token)
      const dave = await signIn(second, (await consoleLink(service, 'dave')).token)
      const unused = await consoleLink(service, 'bob')
      const revoked = await campusgate(service, 'console', 'revoke', '--name', 'bob')
      assert.equal(revoked.code, 0, revoked.err)
      assert.match(revoked.out, /ended 1 console session/)
      assert.equal((await getPage(`${second.url}/console`, bob.cookie)).status, 303)
      assert.equal((await getPage(`${service.url}/console`, bob.cookie)).status, 303)
      assert.equal((await getPage(`${second.url}/console`, dave.cookie)).status, 200)
      const late = await postSignIn(second, { token: unused.token })
      assert.equal(late.status, 401, "revoke also voids the operator's unused links")

      const all = await campusgate(service, 'console', 'revoke', '--all')
      assert.equal(all.code, 0, all.err)
      assert.equal((await getPage(`${service.url}/console`, dave.cookie)).status, 303)
      assert.equal((await campusgate(service, 'console', 'revoke')).code, 2)
    } finally {
      await second.close()
      await service.close()
    }
  })

  it('spends a link once even when two instances are given it at the same moment', async () => {
    const service = await startService(ENV, { clock: new TestClock(Date.now()) })
    const second = await startSecondInstance(service)
    try {
      const { token } = await consoleLink(service)
      const answers = await Promise.all([
        postSignIn(service, { token }),
        postSignIn(second, { token }),
      ])
      assert.deepEqual(answers.map((answer) => answer.status).sort(), [303, 401])
    } finally {
      await second.close()
      await service.close()
    }
  })

  it('names the cookie __Host-campusgate-console with Secure when PUBLIC_BASE_URL is https', async () => {
    const service = await startService({ ...ENV, PUBLIC_BASE_URL: 'https://campusgate.example' })
    try {
      const { token } = await consoleLink(service)
      const answer = await postSignIn(service, { token })
      assert.equal(answer.status, 303)
      const header = answer.headers.get('set-cookie') ?? ''
      assert.match(header, /^__Host-campusgate-console=[A-Za-z0-9_-]{43};/)
      assert.match(header, /; Secure/)
      assert.doesNotMatch(header, /Domain=/i)
    } finally {
      await service.close()
    }
  })

  it("counts failed sign-ins in the console's own limit, answers a page saying when to try again, and never blocks students", async () => {
    const stack = await startStack({
      ...ENV,
      RATE_LIMIT_CONSOLE_SIGN_IN_PER_ADDRESS: '3',
      RATE_LIMIT_REGISTRATION_PER_ADDRESS: '100',
    })
    const service = stack.service
    try {
      // Successful sign-ins do not count.
      for (let round = 0; round < 4; round += 1)
        await signIn(service, (await consoleLink(service)).token)
      for (let attempt = 0; attempt < 2; attempt += 1) {
        const answer = await postSignIn(service, { token: `guess-${attempt}` })
        assert.equal(answer.status, 401)
      }
      assert.equal((await describeLink(service, 'guess-2')).status, 401)
      const { token } = await consoleLink(service)
      // Asking whom a link signs in as counts too, and is refused over the limit.
      const guess = await describeLink(service, 'guess-3')
      assert.equal(guess.status, 429)
      assert.match(JSON.parse(guess.text).message, /Try again in \d+ s/)
      assert.ok(Number(guess.headers.get('retry-after')) >= 1)
      const refused = await postSignIn(service, { token }, { 'accept-language': 'zh-CN' })
      assert.equal(refused.status, 429)
      const retryAfter = Number(refused.headers.get('retry-after'))
      assert.ok(retryAfter >= 1 && retryAfter <= 60, String(retryAfter))
      assert.match(refused.headers.get('content-type') ?? '', /^text\/html/)
      assert.match(refused.text, /<html lang="zh-CN">/)
      assert.match(refused.text, new RegExp(`请在 ${retryAfter} 秒后重试`))
      assert.match(refused.text, /<time datetime="20\d\d-/)
      assert.equal(refused.headers.get('set-cookie'), null, 'the good link was not even tried')
      // The students on the same address register as before.
      const student = await registerMessenger(stack)
      assert.equal((await sessionOf(stack, student.sessionKey)).status, 200)
    } finally {
      await stack.close()
    }
  })

  it('stops start-up with one line naming CONSOLE when it is neither on nor off', () => {
    assert.throws(() => loadConfig({ CONSOLE: 'maybe' }), {
      name: 'Error',
      message: 'CONSOLE: must be "on" or "off"',
    })
  })

  it('is not there with CONSOLE=off', async () => {
    const service = await startService({ ...ENV, CONSOLE: 'off' })
    try {
      assert.equal((await getPage(`${service.url}/console`, null)).status, 404)
      assert.equal((await getPage(`${service.url}/console/sign-in`, null)).status, 404)
    } finally {
      await service.close()
    }
  })
})
