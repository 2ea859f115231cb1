import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import type { TokenAuthMethod } from '../../src/config.js'
import {
  attemptSecrets,
  createOidcIssuer,
  studentStatus,
  tokenAuthMethodFor,
  WRONG_ISS,
  type OidcClient,
  type OidcOutcome,
} from '../../src/university/oidc-client.js'
import { afterSystemTime, TestClock } from '../helpers/clock.js'
import {
  OIDC_CLIENT_ID,
  OIDC_CLIENT_SECRET,
  startOidcProvider,
  type OidcProvider,
  type OidcProviderOptions,
  type SignInOptions,
} from '../helpers/oidc-provider.js'

const REDIRECT_URI = 'http://127.0.0.1:9/authorize/university/callback'

/** campusgate's client of the provider at `issuer`, as the service configures it. */
function clientOf(
  issuer: string,
  options: { clock?: TestClock; tokenAuthMethod?: TokenAuthMethod | null } = {},
): OidcClient {
  return issuerOf(issuer, options).client(REDIRECT_URI)
}

function issuerOf(
  issuer: string,
  options: { clock?: TestClock; tokenAuthMethod?: TokenAuthMethod | null } = {},
) {
  return createOidcIssuer({
    issuer,
    clientId: OIDC_CLIENT_ID,
    clientSecret: OIDC_CLIENT_SECRET,
    scopes: 'openid email profile',
    tokenAuthMethod: options.tokenAuthMethod ?? null,
    timeoutMs: 5000,
    allowInsecureRequests: true,
    clock: options.clock ?? new TestClock(),
  })
}

describe('the OpenID Connect client against oidc-provider', () => {
  let provider: OidcProvider
  let clock: TestClock
  let client: OidcClient

  before(async () => {
    provider = await startOidcProvider({ redirectUri: () => REDIRECT_URI })
    clock = new TestClock()
    client = clientOf(provider.issuer, { clock })
  })
  after(() => provider.close())

  /** A browser's round trip up to the callback: the attempt's secrets and the callback's parameters. */
  async function roundTrip(state: string, options: SignInOptions = {}) {
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
    assert.equal(await client.checkIssuer(params.iss), null)
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

  it('takes error=consent_required (a refusal at the consent page) as a denial too', async () => {
    const { secrets, params } = await roundTrip('open-id-5c', {
      decision: 'deny',
      denial: 'consent_required',
    })
    assert.equal(params.error, 'consent_required')
    assert.deepEqual(await client.complete(params, { ...secrets, state: 'open-id-5c' }), {
      kind: 'denied',
    })
  })

  it('fails on any other error, naming the error and its description', async () => {
    const outcome = await client.complete(
      { error: 'server_error', error_description: 'LDAP\nserver unreachable', state: 's' },
      { ...attemptSecrets('x'), state: 's' },
    )
    assert.deepEqual(outcome, {
      kind: 'failed',
      reason:
        'the provider answered the authorization request: error=server_error, error_description="LDAP server unreachable"',
    })
  })

  it('authenticates with client_secret_post, which this provider advertises', async () => {
    const { secrets, params } = await roundTrip('open-id-p')
    const seen = provider.tokenAuthSeen().length
    assert.equal((await client.complete(params, { ...secrets, state: 'open-id-p' })).kind, 'linked')
    assert.deepEqual(provider.tokenAuthSeen().slice(seen), ['client_secret_post'])
  })

  it('accepts only the discovered issuer as iss, and requires it from this provider', async () => {
    assert.equal(await client.checkIssuer(provider.issuer), null)
    assert.equal(await client.checkIssuer(`${provider.issuer}/other`), WRONG_ISS)
    assert.equal(await client.checkIssuer('https://evil.example'), WRONG_ISS)
    assert.equal(await client.checkIssuer(undefined), WRONG_ISS)
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

    // Within the minute the cached keys stand (an unknown kid cannot make us hammer the provider),
    // however old the discovery is.
    clock.advance(61_000)
    const early = await roundTrip('open-id-r2')
    assert.equal(
      (await client.complete(early.params, { ...early.secrets, state: 'open-id-r2' })).kind,
      'failed',
    )
    assert.equal(provider.jwksFetches(), fetchesBefore)
    const outcome = await afterSystemTime(61_000, async () => {
      const later = await roundTrip('open-id-r3')
      return client.complete(later.params, { ...later.secrets, state: 'open-id-r3' })
    })
    assert.equal(outcome.kind, 'linked', JSON.stringify(outcome))
    assert.equal(provider.jwksFetches(), fetchesBefore + 1)
  })
})

describe('one discovered configuration, taken afresh once a minute old', () => {
  let provider: OidcProvider
  let clock: TestClock
  let issuer: ReturnType<typeof issuerOf>
  let client: OidcClient

  before(async () => {
    provider = await startOidcProvider({ redirectUri: () => REDIRECT_URI })
    clock = new TestClock()
    issuer = issuerOf(provider.issuer, { clock })
    client = issuer.client(REDIRECT_URI)
  })
  after(() => provider.close())

  async function linked(state: string, rp = client): Promise<boolean> {
    const secrets = attemptSecrets(`cookie-${Math.random()}`)
    const location = await rp.authorizationUrl(state, secrets)
    const callback = new URL(await provider.signIn(location))
    const params = Object.fromEntries(callback.searchParams) as Record<string, string>
    const outcome = await rp.complete(params, { ...secrets, state })
    return outcome.kind === 'linked'
  }

  it('discovers the issuer once a minute, and keeps the keys it fetched until five minutes old', async () => {
    for (const state of ['open-id-a', 'open-id-b', 'open-id-c']) assert.ok(await linked(state))
    assert.equal(provider.discoveries(), 1)
    assert.equal(provider.jwksFetches(), 1)
    clock.advance(61_000)
    assert.ok(await linked('open-id-d'))
    assert.equal(provider.discoveries(), 2)
    assert.equal(provider.jwksFetches(), 1)
    clock.advance(5 * 61_000)
    assert.ok(await afterSystemTime(5 * 61_000, () => linked('open-id-d2')))
    assert.equal(provider.discoveries(), 3)
    assert.equal(provider.jwksFetches(), 2)
  })

  it("serves every relying party of the issuer (tier 2, the console's sign-in) from one discovery", async () => {
    clock.advance(61_000)
    const before = provider.discoveries()
    const consoleRp = issuer.client(
      REDIRECT_URI.replace(
        '/authorize/university/callback',
        '/console/sign-in/university/callback',
      ),
    )
    assert.ok(await linked('open-id-t2'))
    const secrets = attemptSecrets('cookie-console')
    const location = new URL(await consoleRp.authorizationUrl('console-state', secrets))
    assert.match(
      location.searchParams.get('redirect_uri') ?? '',
      /\/console\/sign-in\/university\/callback$/,
    )
    assert.ok(await linked('console-state', consoleRp))
    assert.equal(provider.discoveries(), before + 1)
  })

  it('keeps the configuration it has while rediscovery fails, and tries again a minute later', async () => {
    clock.advance(61_000)
    provider.setOutage('discovery')
    const before = provider.discoveries()
    assert.ok(await linked('open-id-e'))
    assert.equal(provider.discoveries(), before + 1)
    provider.setOutage(null)
    clock.advance(30_000)
    assert.ok(await linked('open-id-f'))
    assert.equal(provider.discoveries(), before + 1)
    clock.advance(31_000)
    assert.ok(await linked('open-id-g'))
    assert.equal(provider.discoveries(), before + 2)
  })
})

/** A provider configured for one case, and a client of campusgate's for it. */
async function startCase(
  providerOptions: Omit<OidcProviderOptions, 'redirectUri'>,
  tokenAuthMethod: TokenAuthMethod | null = null,
) {
  const provider = await startOidcProvider({ ...providerOptions, redirectUri: () => REDIRECT_URI })
  const client = clientOf(provider.issuer, { tokenAuthMethod })
  /** A whole round trip: the browser signs in, then the client completes it. */
  async function roundTrip(options: SignInOptions = {}) {
    const secrets = attemptSecrets(`cookie-${Math.random()}`)
    const location = await client.authorizationUrl('open-id', secrets)
    const callback = new URL(await provider.signIn(location, options))
    const params = Object.fromEntries(callback.searchParams) as Record<string, string>
    const outcome = await client.complete(params, { ...secrets, state: 'open-id' })
    return { params, outcome, secrets }
  }
  return { provider, client, roundTrip }
}

function reasonOf(outcome: OidcOutcome): string {
  assert.equal(outcome.kind, 'failed', JSON.stringify(outcome))
  return outcome.kind === 'failed' ? outcome.reason : ''
}

describe('the token endpoint authentication method (issue 25)', () => {
  it('is client_secret_post when advertised, else client_secret_basic, unless configured', () => {
    const both = {
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    }
    assert.equal(tokenAuthMethodFor(null, both), 'client_secret_post')
    assert.equal(
      tokenAuthMethodFor(null, { token_endpoint_auth_methods_supported: ['client_secret_basic'] }),
      'client_secret_basic',
    )
    assert.equal(tokenAuthMethodFor(null, {}), 'client_secret_basic')
    assert.equal(tokenAuthMethodFor('client_secret_basic', both), 'client_secret_basic')
    assert.equal(tokenAuthMethodFor('client_secret_post', {}), 'client_secret_post')
  })

  describe('against a provider that compares Basic credentials as written (LemonLDAP::NG)', () => {
    const cases: Awaited<ReturnType<typeof startCase>>[] = []
    after(() => Promise.all(cases.map(({ provider }) => provider.close())))

    it('signs in by default with a secret containing "-", through client_secret_post', async () => {
      assert.match(OIDC_CLIENT_SECRET, /-/)
      const lemon = await startCase({ basicCredentials: 'literal' })
      cases.push(lemon)
      const { outcome } = await lemon.roundTrip()
      assert.equal(outcome.kind, 'linked', JSON.stringify(outcome))
      assert.deepEqual(lemon.provider.tokenAuthSeen(), ['client_secret_post'])
    })

    it("fails with client_secret_basic, naming the call, its status and the provider's error", async () => {
      const lemon = await startCase({ basicCredentials: 'literal' }, 'client_secret_basic')
      cases.push(lemon)
      const { outcome, params, secrets } = await lemon.roundTrip()
      const reason = reasonOf(outcome)
      assert.deepEqual(lemon.provider.tokenAuthSeen(), ['client_secret_basic'])
      assert.match(
        reason,
        /^token request \(client_secret_basic\) failed: HTTP 401, error=invalid_client, /,
      )
      assert.match(reason, /WWWAuthenticateChallengeError/)
      assert.ok(params.code.length > 0)
      for (const secret of [OIDC_CLIENT_SECRET, params.code, secrets.codeVerifier]) {
        assert.ok(!reason.includes(secret), 'a secret is in the reason')
      }
    })
  })

  it('uses client_secret_basic with a provider that offers only that', async () => {
    const basicOnly = await startCase({ tokenAuthMethods: ['client_secret_basic'] })
    try {
      const { outcome } = await basicOnly.roundTrip()
      assert.equal(outcome.kind, 'linked', JSON.stringify(outcome))
      assert.deepEqual(basicOnly.provider.tokenAuthSeen(), ['client_secret_basic'])
    } finally {
      await basicOnly.provider.close()
    }
  })

  it('uses client_secret_post with a provider that offers only that', async () => {
    const postOnly = await startCase({ tokenAuthMethods: ['client_secret_post'] })
    try {
      const { outcome } = await postOnly.roundTrip()
      assert.equal(outcome.kind, 'linked', JSON.stringify(outcome))
      assert.deepEqual(postOnly.provider.tokenAuthSeen(), ['client_secret_post'])
    } finally {
      await postOnly.provider.close()
    }
  })
})

describe('ID tokens signed with a symmetric algorithm (issue 25)', () => {
  for (const alg of ['HS256', 'HS512']) {
    it(`refuses ${alg}, naming the algorithm`, async () => {
      const hs = await startCase({ idTokenAlg: alg })
      try {
        const { outcome } = await hs.roundTrip()
        const reason = reasonOf(outcome)
        assert.match(reason, new RegExp(`ID token signed with ${alg}, a symmetric algorithm`))
        assert.match(reason, /UnsupportedOperationError: unsupported JWS algorithm/)
        assert.ok(!reason.includes(OIDC_CLIENT_SECRET))
      } finally {
        await hs.provider.close()
      }
    })
  }
})

describe('a provider without RFC 9207 iss (as Entra ID)', () => {
  let entra: Awaited<ReturnType<typeof startCase>>
  before(async () => {
    entra = await startCase({ issParameter: false })
  })
  after(() => entra.provider.close())

  it('accepts a callback without iss and completes the round trip', async () => {
    assert.equal(await entra.client.checkIssuer(undefined), null)
    const { params, outcome } = await entra.roundTrip()
    assert.equal(params.iss, undefined)
    assert.equal(outcome.kind, 'linked', JSON.stringify(outcome))
  })

  it('still refuses an iss that names another issuer', async () => {
    assert.equal(await entra.client.checkIssuer('https://evil.example'), WRONG_ISS)
    assert.equal(await entra.client.checkIssuer(entra.provider.issuer), null)
  })
})

describe('a callback while the issuer cannot be discovered', () => {
  it('is refused, saying discovery failed and why, never that iss was wrong', async () => {
    // A provider that stopped: its port refuses connections.
    const stopped = await startOidcProvider({ redirectUri: () => REDIRECT_URI })
    const issuer = stopped.issuer
    await stopped.close()
    const client = clientOf(issuer)
    const refused = await client.checkIssuer(issuer)
    assert.match(refused ?? '', /^discovery failed: .*ECONNREFUSED/)
    assert.ok(!refused?.includes(OIDC_CLIENT_SECRET))
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
