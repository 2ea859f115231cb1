import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { TestClock } from '../helpers/clock.js'
import { getPage, TEST_KEY } from '../helpers/console.js'
import {
  oidcSignInAndReturn,
  oidcUserInBrowser,
  startOidcStack,
  type OidcStack,
} from '../helpers/oidc-stack.js'
import { parseSetCookie } from '../helpers/stack.js'

/**
 * docs/console.md: with UNIVERSITY_PROTOCOL=oidc and CONSOLE_OPERATORS, the operators
 * it lists sign in with their university account (its own state, nonce and PKCE); anyone else is
 * refused. Against oidc-provider, as tier 2's OIDC tests.
 */
describe('the operator console: university sign-in of CONSOLE_OPERATORS', () => {
  let stack: OidcStack

  before(async () => {
    stack = await startOidcStack(
      // alice by email (any case), carol by subject as a viewer; bob is a member but no operator.
      {
        DATA_ENCRYPTION_KEY: TEST_KEY,
        CONSOLE_OPERATORS: 'ALICE@uni.example.ac.uk, carol-0003:viewer',
      },
      { clock: new TestClock(Date.now()) },
    )
  })
  after(() => stack.close())

  /** The browser: start at the console, sign in at the provider, come back with the attempt cookie. */
  async function signInAs(member: 'alice' | 'bob' | 'carol', next = '') {
    const start = await getPage(
      `${stack.service.url}/console/sign-in/university${next === '' ? '' : `?next=${encodeURIComponent(next)}`}`,
      null,
    )
    assert.equal(start.status, 303)
    const location = start.headers.get('location') ?? ''
    const attempt = parseSetCookie(start.headers.get('set-cookie') ?? '')
    assert.equal(attempt.name, 'campusgate-console-attempt')
    assert.equal(attempt.attributes.httponly, true)
    const callback = await stack.oidc.signIn(location, { member })
    const back = await getPage(callback, `${attempt.name}=${attempt.value}`)
    return { location, callback, back }
  }

  async function lastAudit() {
    return stack.service.db.kysely
      .selectFrom('audit_events')
      .select(['type', 'actor', 'detail'])
      .where('type', 'like', 'console-sign-in%')
      .orderBy('at', 'desc')
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow()
  }

  it('offers the university sign-in on the sign-in page', async () => {
    const page = await getPage(`${stack.service.url}/console/sign-in`, null)
    assert.match(
      page.text,
      /href="\/console\/sign-in\/university">Sign in with your university account/,
    )
  })

  it("sends its own authorization request: the console's redirect URI, state, nonce and PKCE", async () => {
    const start = await getPage(`${stack.service.url}/console/sign-in/university`, null)
    const url = new URL(start.headers.get('location') ?? '')
    assert.equal(
      url.searchParams.get('redirect_uri'),
      `${stack.service.url}/console/sign-in/university/callback`,
    )
    assert.equal(url.searchParams.get('code_challenge_method'), 'S256')
    for (const name of ['state', 'nonce', 'code_challenge']) {
      assert.match(url.searchParams.get(name) ?? '', /^[A-Za-z0-9_-]{43}$/, name)
    }
  })

  it('signs in an operator listed by email, and one listed by subject as a viewer, naming the subject', async () => {
    for (const [member, subject, role] of [
      ['alice', 'alice-0001', 'admin'],
      ['carol', 'carol-0003', 'viewer'],
    ] as const) {
      const { back } = await signInAs(member)
      assert.equal(back.status, 200, back.text)
      assert.match(back.text, /<meta http-equiv="refresh" content="0;url=\/console">/)
      const cookie = parseSetCookie(
        (back.headers.getSetCookie?.() ?? []).find((header) =>
          header.startsWith('campusgate-console='),
        ) ?? '',
      )
      assert.match(cookie.value, /^[A-Za-z0-9_-]{43}$/)
      assert.equal(cookie.attributes.samesite, 'Strict')
      const overview = await getPage(
        `${stack.service.url}/console`,
        `${cookie.name}=${cookie.value}`,
      )
      assert.equal(overview.status, 200)
      assert.match(overview.text, new RegExp(`Signed in as <strong>${subject}</strong>`))
      const audited = await lastAudit()
      assert.deepEqual(
        [audited.type, audited.actor, audited.detail],
        ['console-sign-in', `console:${subject}`, `{"method":"university","role":"${role}"}`],
      )
    }
  })

  it('returns to the page asked for through the round trip, and to the overview for a foreign target', async () => {
    const { back } = await signInAs('alice', '/console/audit?type=logout')
    assert.match(
      back.text,
      /<meta http-equiv="refresh" content="0;url=\/console\/audit\?type=logout">/,
    )
    const evil = await signInAs('alice', '//evil.example/console')
    assert.match(evil.back.text, /<meta http-equiv="refresh" content="0;url=\/console">/)
  })

  it('refuses a member who is not an operator, and a callback without the attempt cookie', async () => {
    const { back, callback } = await signInAs('bob')
    assert.equal(back.status, 403)
    assert.match(back.text, /This account may not use the console/)
    assert.ok(
      !(back.headers.getSetCookie?.() ?? []).some((h) => h.startsWith('campusgate-console=')),
    )
    assert.equal((await lastAudit()).type, 'console-sign-in-refused')

    const stray = await getPage(callback, null)
    assert.equal(stray.status, 403)
  })

  it("discovers the issuer once for both a member's tier-2 link and the operators' sign-ins", async () => {
    const user = await oidcUserInBrowser(stack)
    assert.match((await oidcSignInAndReturn(stack, user)).done.text, /University account linked/)
    assert.equal((await signInAs('carol')).back.status, 200)
    // The app's clock has not moved since the stack started: one discovery serves every request.
    assert.equal(stack.oidc.discoveries(), 1)
  })
})
