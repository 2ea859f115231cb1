import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import {
  attemptSecrets,
  createOidcClient,
  studentStatus,
  type OidcClient,
} from '../../src/university/oidc-client.js'
import { TestClock } from '../helpers/clock.js'
import {
  OIDC_CLIENT_ID,
  OIDC_CLIENT_SECRET,
  startOidcProvider,
  type MemberName,
  type OidcProvider,
} from '../helpers/oidc-provider.js'

const REDIRECT_URI = 'http://127.0.0.1:9/authorize/university/callback'

describe('the OpenID Connect client against oidc-provider', () => {
  let provider: OidcProvider
  let clock: TestClock
  let client: OidcClient

  before(async () => {
    provider = await startOidcProvider({ redirectUri: () => REDIRECT_URI })
    clock = new TestClock()
    client = createOidcClient({
      issuer: provider.issuer,
      clientId: OIDC_CLIENT_ID,
      clientSecret: OIDC_CLIENT_SECRET,
      redirectUri: REDIRECT_URI,
      scopes: 'openid email profile',
      timeoutMs: 5000,
      allowInsecureRequests: true,
      clock,
    })
  })
  after(() => provider.close())

  /** A browser's round trip up to the callback: the attempt's secrets and the callback's parameters. */
  async function roundTrip(
    state: string,
    options: { member?: MemberName; decision?: 'allow' | 'deny' } = {},
  ) {
    const secrets = attemptSecrets(`cookie-${Math.random()}`)
    const location = await client.authorizationUrl(state, secrets)
    const callback = new URL(await provider.signIn(location, options))
    const params = Object.fromEntries(callback.searchParams) as Record<string, string>
    return { secrets, params, callback, location: new URL(location) }
  }

  it('asks for the code flow with client_id, state, PKCE S256, a nonce and the scopes', async () => {
    const secrets = attemptSecrets('some-cookie')
    const url = new URL(await client.authorizationUrl('open-id-1', secrets))
    assert.equal(url.origin, provider.issuer)
    const query = Object.fromEntries(url.searchParams)
    const challenge = createHash('sha256').update(secrets.codeVerifier).digest('base64url')
    assert.deepEqual(query, {
      client_id: OIDC_CLIENT_ID,
      state: 'open-id-1',
      response_type: 'code',
      redirect_uri: REDIRECT_URI,
      scope: 'openid email profile',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      nonce: secrets.nonce,
    })
    assert.deepEqual(Object.keys(query).slice(0, 2), ['client_id', 'state'])
  })

  it('derives different, unguessable verifier and nonce per attempt cookie', () => {
    const a = attemptSecrets('cookie-a')
    const b = attemptSecrets('cookie-b')
    assert.notEqual(a.codeVerifier, b.codeVerifier)
    assert.notEqual(a.nonce, a.codeVerifier)
    assert.match(a.codeVerifier, /^[A-Za-z0-9_-]{43}$/)
    assert.deepEqual(attemptSecrets('cookie-a'), a)
  })

  it('links the member after a full round trip, with claims from the ID token and userinfo', async () => {
    const { secrets, params } = await roundTrip('open-id-2')
    assert.equal(params.iss, provider.issuer)
    assert.equal(params.state, 'open-id-2')
    assert.equal(await client.issuerAccepted(params.iss), true)
    const outcome = await client.complete(params, { ...secrets, state: 'open-id-2' })
    assert.equal(outcome.kind, 'linked', JSON.stringify(outcome))
    if (outcome.kind !== 'linked') return
    assert.deepEqual(outcome.identity, {
      issuer: provider.issuer,
      subject: 'alice-0001',
      email: 'alice@uni.example.ac.uk',
      name: 'Alice Example',
      isStudent: true,
    })
    assert.ok(outcome.tokens.accessToken.length > 0)
  })

  it('gives staff isStudent false and leaves out what the provider does not say', async () => {
    const bob = await roundTrip('open-id-3', { member: 'bob' })
    const bobOutcome = await client.complete(bob.params, { ...bob.secrets, state: 'open-id-3' })
    assert.equal(bobOutcome.kind === 'linked' && bobOutcome.identity.isStudent, false)
    const carol = await roundTrip('open-id-4', { member: 'carol' })
    const outcome = await client.complete(carol.params, { ...carol.secrets, state: 'open-id-4' })
    assert.equal(outcome.kind, 'linked', JSON.stringify(outcome))
    if (outcome.kind === 'linked') {
      assert.deepEqual(outcome.identity, {
        issuer: provider.issuer,
        subject: 'carol-0003',
        email: 'carol@uni.example.ac.uk',
      })
    }
  })

  it('takes error=access_denied as a denial', async () => {
    const { secrets, params } = await roundTrip('open-id-5', { decision: 'deny' })
    assert.equal(params.error, 'access_denied')
    assert.equal(params.iss, provider.issuer)
    assert.equal(params.code, undefined)
    assert.deepEqual(await client.complete(params, { ...secrets, state: 'open-id-5' }), {
      kind: 'denied',
    })
  })

  it('accepts only the discovered issuer as iss, and requires it from this provider', async () => {
    assert.equal(await client.issuerAccepted(provider.issuer), true)
    assert.equal(await client.issuerAccepted(`${provider.issuer}/other`), false)
    assert.equal(await client.issuerAccepted('https://evil.example'), false)
    assert.equal(await client.issuerAccepted(undefined), false)
  })

  it('fails on a wrong nonce, a wrong verifier, a wrong state and a replayed code', async () => {
    const wrongNonce = await roundTrip('open-id-6')
    const nonceOutcome = await client.complete(wrongNonce.params, {
      ...wrongNonce.secrets,
      nonce: attemptSecrets('other').nonce,
      state: 'open-id-6',
    })
    assert.equal(nonceOutcome.kind, 'failed')

    const wrongVerifier = await roundTrip('open-id-7')
    const verifierOutcome = await client.complete(wrongVerifier.params, {
      ...wrongVerifier.secrets,
      codeVerifier: attemptSecrets('other').codeVerifier,
      state: 'open-id-7',
    })
    assert.equal(verifierOutcome.kind, 'failed')

    const wrongState = await roundTrip('open-id-8')
    const stateOutcome = await client.complete(wrongState.params, {
      ...wrongState.secrets,
      state: 'someone-else',
    })
    assert.equal(stateOutcome.kind, 'failed')

    const replayed = await roundTrip('open-id-9')
    const expected = { ...replayed.secrets, state: 'open-id-9' }
    assert.equal((await client.complete(replayed.params, expected)).kind, 'linked')
    const again = await client.complete(replayed.params, expected)
    assert.equal(again.kind, 'failed')
    if (again.kind === 'failed') {
      assert.ok(!again.reason.includes(replayed.params.code), 'the code is not in the reason')
      assert.ok(!again.reason.includes(OIDC_CLIENT_SECRET))
    }
  })

  for (const [what, tamper] of [
    ['for another audience', { claims: { aud: 'another-client' } }],
    ['from another issuer', { claims: { iss: 'https://other-issuer.example' } }],
    ['with a wrong nonce', { claims: { nonce: 'not-the-attempt-nonce' } }],
    ['that has expired', { claims: { exp: Math.floor(Date.now() / 1000) - 3600 } }],
    ['signed with a key the provider never published', { foreignKey: true }],
  ] as const) {
    it(`refuses an ID token ${what}`, async () => {
      const { secrets, params } = await roundTrip('open-id-t')
      provider.tamperNextIdToken(tamper)
      const outcome = await client.complete(params, { ...secrets, state: 'open-id-t' })
      assert.equal(outcome.kind, 'failed', JSON.stringify(outcome))
    })
  }

  it('follows a key rotation at the provider once its cached keys are a minute old', async () => {
    const first = await roundTrip('open-id-r1')
    assert.equal(
      (await client.complete(first.params, { ...first.secrets, state: 'open-id-r1' })).kind,
      'linked',
    )
    const fetchesBefore = provider.jwksFetches()
    provider.rotateKeys()
    provider.retireOldKeys()

    // Within the minute the cached keys stand (an unknown kid cannot make us hammer the provider).
    const early = await roundTrip('open-id-r2')
    assert.equal(
      (await client.complete(early.params, { ...early.secrets, state: 'open-id-r2' })).kind,
      'failed',
    )
    clock.advance(61_000)
    const later = await roundTrip('open-id-r3')
    const outcome = await client.complete(later.params, { ...later.secrets, state: 'open-id-r3' })
    assert.equal(outcome.kind, 'linked', JSON.stringify(outcome))
    assert.ok(provider.jwksFetches() > fetchesBefore)
  })
})

describe('student status from claims', () => {
  it('reads is_student, then eduPerson affiliations, and says nothing otherwise', () => {
    assert.equal(studentStatus({ is_student: false, eduperson_affiliation: ['student'] }), false)
    assert.equal(studentStatus({ eduperson_affiliation: ['member', 'student'] }), true)
    assert.equal(studentStatus({ eduperson_scoped_affiliation: ['student@ucl.ac.uk'] }), true)
    assert.equal(studentStatus({ eduperson_scoped_affiliation: 'staff@ucl.ac.uk' }), false)
    assert.equal(studentStatus({ name: 'x' }), undefined)
  })
})
