import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { latestAuditEvents } from '../../src/audit/store.js'
import { OIDC_CLIENT_ID, OIDC_CLIENT_SECRET } from '../helpers/oidc-provider.js'
import {
  oidcSignInAndReturn,
  oidcUserInBrowser,
  startOidcStack,
  type OidcStack,
} from '../helpers/oidc-stack.js'
import { afterSystemTime } from '../helpers/clock.js'
import { logEvents } from '../helpers/logs.js'
import { call } from '../helpers/service.js'
import {
  attemptStatusesOf,
  followCallback,
  registerMessenger,
  requestConfirmationLink,
  sessionOf,
  userRowOf,
  withParams,
} from '../helpers/stack.js'

const LINKED = /<h1>University account linked<\/h1>/
const DECLINED = /<h1>Authorization declined<\/h1>/
const FAILED = /<h1>Linking failed<\/h1>/
const NEUTRAL = /<h1>Return to the app<\/h1>/
const MINUTE = 60_000

async function tierOf(stack: OidcStack, sessionKey: string): Promise<string> {
  return (await sessionOf(stack, sessionKey)).body.tier as string
}

/** The reason of the last `university-link-failed` line of the log. */
function lastFailure(stack: OidcStack): string {
  return String(logEvents(stack.service, 'university-link-failed').at(-1)?.reason)
}

async function auditTypesOf(stack: OidcStack, openId: string): Promise<string[]> {
  const events = await latestAuditEvents(stack.service.db.kysely, 100, openId)
  return events.map((event) => event.type).filter((type) => type.startsWith('university-'))
}

function refusals(stack: OidcStack): string[] {
  return logEvents(stack.service, 'university-callback-refused').map(
    (line) => line.reason as string,
  )
}

describe('tier 2 through OpenID Connect (oidc-provider on loopback)', () => {
  let stack: OidcStack
  before(async () => {
    // Many users sign in as the same few members here; one member, one account has its own tests.
    stack = await startOidcStack({ UNIVERSITY_IDENTITY_BINDING: 'shared' })
  })
  after(() => stack.close())

  it('redirects with the seed 301 to the authorization endpoint, with PKCE, nonce and scopes', async () => {
    const user = await oidcUserInBrowser(stack)
    const headers = user.opened.headers
    assert.equal(headers.get('cache-control'), 'no-cache, no-store, must-revalidate')
    assert.equal(headers.get('pragma'), 'no-cache')
    assert.equal(headers.get('expires'), '0')
    assert.equal(headers.get('referrer-policy'), 'no-referrer')
    const location = new URL(user.location)
    assert.equal(`${location.origin}${location.pathname}`, `${stack.oidc.issuer}/auth`)
    assert.ok(
      user.location.includes(`?client_id=${OIDC_CLIENT_ID}&state=${user.openId}&`),
      user.location,
    )
    const query = Object.fromEntries(location.searchParams)
    assert.equal(query.response_type, 'code')
    assert.equal(query.redirect_uri, `${stack.service.url}/authorize/university/callback`)
    assert.equal(query.scope, 'openid email profile')
    assert.equal(query.code_challenge_method, 'S256')
    assert.match(query.code_challenge, /^[A-Za-z0-9_-]{43}$/)
    assert.match(query.nonce, /^[A-Za-z0-9_-]{43}$/)
  })

  it('links the member after the full round trip, names the account and shows it on GET /session', async () => {
    const user = await oidcUserInBrowser(stack)
    const { callback, done } = await oidcSignInAndReturn(stack, user, { member: 'alice' })
    assert.equal(new URL(callback).searchParams.get('iss'), stack.oidc.issuer)
    assert.equal(done.status, 200)
    assert.match(done.text, LINKED)
    assert.match(done.text, /Alice Example \(alice@uni\.example\.ac\.uk\)/)

    const session = await sessionOf(stack, user.sessionKey)
    assert.equal(session.body.tier, 'university-registered')
    const { linkedAt, ...identity } = session.body.university
    assert.deepEqual(identity, {
      subject: 'alice-0001',
      email: 'alice@uni.example.ac.uk',
      name: 'Alice Example',
      isStudent: true,
    })
    assert.equal(linkedAt, stack.service.clock.now().toISOString())

    const row = await userRowOf(stack, user.openId)
    assert.equal(row.university_issuer, stack.oidc.issuer)
    assert.equal(row.university_subject, 'alice-0001')
    // Neither the code, the PKCE verifier nor any token is stored in clear.
    const dump = JSON.stringify(
      await stack.service.db.kysely.selectFrom('university_attempts').selectAll().execute(),
    )
    const code = new URL(callback).searchParams.get('code')!
    assert.ok(!JSON.stringify(row).includes(code) && !dump.includes(code))
    assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['completed'])
  })

  it('leaves out what the provider does not release', async () => {
    const user = await oidcUserInBrowser(stack)
    const { done } = await oidcSignInAndReturn(stack, user, { member: 'carol' })
    assert.match(done.text, LINKED)
    const { university } = (await sessionOf(stack, user.sessionKey)).body
    assert.deepEqual(Object.keys(university).sort(), ['email', 'linkedAt', 'subject'])
  })

  it('takes error=access_denied as a denial and links nothing', async () => {
    const user = await oidcUserInBrowser(stack)
    const { callback, done } = await oidcSignInAndReturn(stack, user, { decision: 'deny' })
    assert.equal(new URL(callback).searchParams.get('error'), 'access_denied')
    assert.match(done.text, DECLINED)
    assert.equal(await tierOf(stack, user.sessionKey), 'messenger-registered')
    assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['denied'])
  })

  it('fails the attempt on another error from the provider', async () => {
    const user = await oidcUserInBrowser(stack)
    const callback = await stack.oidc.signIn(user.location, { decision: 'deny' })
    const done = await followCallback(withParams(callback, { error: 'server_error' }), null)
    assert.match(done.text, NEUTRAL, 'without the cookie: nothing happens')
    const failed = await followCallback(
      withParams(callback, { error: 'server_error' }),
      user.cookie,
    )
    assert.match(failed.text, FAILED)
    assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['failed'])
    assert.deepEqual(await auditTypesOf(stack, user.openId), [
      'university-refused',
      'university-failed',
    ])
    assert.equal(
      lastFailure(stack),
      'the provider answered the authorization request: error=server_error, error_description="the member declined"',
    )
  })

  it('takes error=consent_required as the user declining (issue 25)', async () => {
    const user = await oidcUserInBrowser(stack)
    const { callback, done } = await oidcSignInAndReturn(stack, user, {
      decision: 'deny',
      denial: 'consent_required',
    })
    assert.equal(new URL(callback).searchParams.get('error'), 'consent_required')
    assert.match(done.text, DECLINED)
    assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['denied'])
    assert.deepEqual(await auditTypesOf(stack, user.openId), ['university-denied'])
  })

  for (const [what, change] of [
    ['missing', null],
    ['naming another issuer', 'https://evil.example'],
  ] as const) {
    it(`changes nothing when iss is ${what}, and the genuine callback still links`, async () => {
      const user = await oidcUserInBrowser(stack)
      const callback = await stack.oidc.signIn(user.location)
      const forged = await followCallback(withParams(callback, { iss: change }), user.cookie)
      assert.equal(forged.status, 200)
      assert.match(forged.text, NEUTRAL)
      assert.equal(refusals(stack).at(-1), 'iss missing or not the issuer')
      assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['redirected'])
      assert.match((await followCallback(callback, user.cookie)).text, LINKED)
    })
  }

  it('links nothing for an ID token with a wrong nonce', async () => {
    const user = await oidcUserInBrowser(stack)
    const callback = await stack.oidc.signIn(user.location)
    stack.oidc.tamperNextIdToken({ claims: { nonce: 'another-attempt' } })
    assert.match((await followCallback(callback, user.cookie)).text, FAILED)
    assert.equal(await tierOf(stack, user.sessionKey), 'messenger-registered')
  })

  for (const [what, claims] of [
    ['for another audience', { aud: 'another-client' }],
    ['from another issuer', { iss: 'https://other-issuer.example' }],
  ] as const) {
    it(`links nothing for an ID token ${what}`, async () => {
      const user = await oidcUserInBrowser(stack)
      const callback = await stack.oidc.signIn(user.location)
      stack.oidc.tamperNextIdToken({ claims })
      assert.match((await followCallback(callback, user.cookie)).text, FAILED)
      assert.equal(await tierOf(stack, user.sessionKey), 'messenger-registered')
      assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['failed'])
    })
  }

  it('acts once on a replayed callback, and a code carried into another attempt links nothing', async () => {
    const user = await oidcUserInBrowser(stack)
    const second = await call(user.link)
    const secondCookie = (second.headers.get('set-cookie') ?? '').split(';')[0]
    const callback = await stack.oidc.signIn(user.location)
    // The code into the other attempt (its cookie, so its PKCE verifier): the provider refuses it.
    assert.match((await followCallback(callback, secondCookie)).text, FAILED)
    assert.equal(await tierOf(stack, user.sessionKey), 'messenger-registered')
    // In the attempt it was issued for, the code works once; replayed, it changes nothing.
    assert.match((await followCallback(callback, user.cookie)).text, LINKED)
    assert.match((await followCallback(callback, user.cookie)).text, NEUTRAL)
    assert.deepEqual((await attemptStatusesOf(stack, user.openId)).sort(), ['completed', 'failed'])
  })

  it('changes nothing once the attempt has expired', async () => {
    const user = await oidcUserInBrowser(stack)
    const callback = await stack.oidc.signIn(user.location)
    stack.service.clock.advance(10 * MINUTE + 1000)
    assert.match((await followCallback(callback, user.cookie)).text, NEUTRAL)
    assert.equal(await tierOf(stack, user.sessionKey), 'messenger-registered')
  })

  it('changes nothing without the attempt cookie', async () => {
    const user = await oidcUserInBrowser(stack)
    const callback = await stack.oidc.signIn(user.location)
    assert.match((await followCallback(callback, null)).text, NEUTRAL)
    assert.match((await followCallback(callback, 'campusgate-attempt=forged')).text, NEUTRAL)
    assert.equal(await tierOf(stack, user.sessionKey), 'messenger-registered')
  })

  it('follows a key rotation at the provider within a minute', async () => {
    const first = await oidcUserInBrowser(stack)
    assert.match((await oidcSignInAndReturn(stack, first)).done.text, LINKED)
    stack.oidc.rotateKeys()
    stack.oidc.retireOldKeys()
    const fetches = stack.oidc.jwksFetches()
    // openid-client ages the keys on the system clock.
    const done = await afterSystemTime(MINUTE + 1000, async () => {
      const second = await oidcUserInBrowser(stack)
      return (await oidcSignInAndReturn(stack, second, { member: 'bob' })).done
    })
    assert.match(done.text, LINKED)
    assert.ok(stack.oidc.jwksFetches() > fetches)
  })

  it('never writes the client secret, codes, cookies or tokens to the log', async () => {
    const user = await oidcUserInBrowser(stack)
    const { callback } = await oidcSignInAndReturn(stack, user, { member: 'bob' })
    const logs = stack.service.logs()
    const code = new URL(callback).searchParams.get('code')!
    for (const secret of [OIDC_CLIENT_SECRET, code, user.cookie.split('=')[1], user.sessionKey]) {
      assert.ok(!logs.includes(secret), 'a secret reached the log')
    }
    const sha = createHash('sha256').update(user.cookie.split('=')[1]).digest('base64url')
    assert.ok(!logs.includes(sha))
  })
})

describe('tier 2 through OpenID Connect when the provider cannot be discovered', () => {
  let stack: OidcStack
  before(async () => {
    stack = await startOidcStack()
    await stack.oidc.close()
  })
  after(() => stack.close().catch(() => undefined))

  it('answers the link 502 university-provider-unavailable, with the no-cache headers', async () => {
    const user = await registerMessenger(stack)
    const link = await requestConfirmationLink(stack, user.sessionKey, 'student@example.edu')
    const response = await call(link)
    assert.equal(response.status, 502, response.text)
    assert.deepEqual(response.body, { error: '@bad-gateway/university-provider-unavailable' })
    assert.equal(response.headers.get('cache-control'), 'no-cache, no-store, must-revalidate')
    assert.equal(response.headers.get('set-cookie'), null)
    assert.deepEqual(await attemptStatusesOf(stack, user.openId), [])
  })
})

describe('tier 2 against a provider that takes Basic credentials as written (issue 25, LemonLDAP::NG)', () => {
  const provider = { basicCredentials: 'literal' } as const

  it('links by default, authenticating with client_secret_post, with a secret containing "-"', async () => {
    assert.match(OIDC_CLIENT_SECRET, /-/)
    const stack = await startOidcStack({}, { provider })
    try {
      const user = await oidcUserInBrowser(stack)
      assert.match((await oidcSignInAndReturn(stack, user)).done.text, LINKED)
      assert.deepEqual(stack.oidc.tokenAuthSeen(), ['client_secret_post'])
    } finally {
      await stack.close()
    }
  })

  it('with UNIVERSITY_TOKEN_AUTH_METHOD=client_secret_basic fails, logging invalid_client and the status', async () => {
    const stack = await startOidcStack(
      { UNIVERSITY_TOKEN_AUTH_METHOD: 'client_secret_basic' },
      { provider },
    )
    try {
      const user = await oidcUserInBrowser(stack)
      const { callback, done } = await oidcSignInAndReturn(stack, user)
      assert.match(done.text, FAILED)
      assert.deepEqual(stack.oidc.tokenAuthSeen(), ['client_secret_basic'])
      assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['failed'])
      assert.deepEqual(await auditTypesOf(stack, user.openId), ['university-failed'])
      assert.match(
        lastFailure(stack),
        /^token request \(client_secret_basic\) failed: HTTP 401, error=invalid_client, error_description="[^"]+", WWWAuthenticateChallengeError/,
      )
      const logs = stack.service.logs()
      const code = new URL(callback).searchParams.get('code')!
      for (const secret of [OIDC_CLIENT_SECRET, code, user.cookie.split('=')[1]]) {
        assert.ok(!logs.includes(secret), 'a secret reached the log')
      }
    } finally {
      await stack.close()
    }
  })
})

describe('tier 2 against a provider that signs ID tokens with HS512 (issue 25)', () => {
  let stack: OidcStack
  before(async () => {
    stack = await startOidcStack({}, { provider: { idTokenAlg: 'HS512' } })
  })
  after(() => stack.close())

  it('links nothing and logs the algorithm it refused', async () => {
    const user = await oidcUserInBrowser(stack)
    assert.match((await oidcSignInAndReturn(stack, user)).done.text, FAILED)
    assert.equal(await tierOf(stack, user.sessionKey), 'messenger-registered')
    assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['failed'])
    assert.match(lastFailure(stack), /ID token signed with HS512, a symmetric algorithm/)
    assert.ok(!stack.service.logs().includes(OIDC_CLIENT_SECRET))
  })
})

describe('tier 2 against a provider that neither advertises nor sends iss (as Entra ID)', () => {
  let stack: OidcStack
  before(async () => {
    stack = await startOidcStack({}, { provider: { issParameter: false } })
  })
  after(() => stack.close())

  it('links from a callback without iss', async () => {
    const user = await oidcUserInBrowser(stack)
    const { callback, done } = await oidcSignInAndReturn(stack, user)
    assert.equal(new URL(callback).searchParams.get('iss'), null)
    assert.match(done.text, LINKED)
  })

  it('still changes nothing when iss names another issuer', async () => {
    const user = await oidcUserInBrowser(stack)
    const callback = await stack.oidc.signIn(user.location, { member: 'bob' })
    const forged = await followCallback(
      withParams(callback, { iss: 'https://evil.example' }),
      user.cookie,
    )
    assert.match(forged.text, NEUTRAL)
    assert.equal(refusals(stack).at(-1), 'iss missing or not the issuer')
    assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['redirected'])
    assert.match((await followCallback(callback, user.cookie)).text, LINKED)
  })
})
