import { createPrivateKey, generateKeyPairSync, randomUUID, sign } from 'node:crypto'
import { once } from 'node:events'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import Provider from 'oidc-provider'

/**
 * A real, certified OpenID Provider (`oidc-provider` from npm) on loopback over http, with one
 * confidential client registered for campusgate, a few university members, a sign-in page a test
 * completes without a browser, RFC 9207 `iss` in every authorization response, and signing keys
 * that rotate on demand.
 */

export const OIDC_CLIENT_ID = 'campusgate-oidc-client'
export const OIDC_CLIENT_SECRET = 'campusgate-oidc-secret-0123456789abcdef'

export interface Member {
  sub: string
  email?: string
  name?: string
  given_name?: string
  /** REFEDS / eduPerson affiliations, as a Shibboleth OIDC OP releases them. */
  eduperson_affiliation?: string[]
}

export const MEMBERS: Readonly<Record<string, Member>> = {
  alice: {
    sub: 'alice-0001',
    email: 'alice@uni.example.ac.uk',
    name: 'Alice Example',
    given_name: 'Alice',
    eduperson_affiliation: ['student', 'member'],
  },
  bob: {
    sub: 'bob-0002',
    email: 'bob@uni.example.ac.uk',
    name: 'Bob Example',
    given_name: 'Bob',
    eduperson_affiliation: ['staff', 'member'],
  },
  // A member the provider knows little about: no name, no affiliation.
  carol: { sub: 'carol-0003', email: 'carol@uni.example.ac.uk' },
}

export type MemberName = 'alice' | 'bob' | 'carol'

/** Changes to the next ID token the token endpoint returns, re-signed as the provider would. */
export interface IdTokenTamper {
  claims?: Record<string, unknown>
  /** Sign with a key the provider never published. */
  foreignKey?: boolean
}

export interface OidcProvider {
  issuer: string
  /** The environment that points campusgate at this provider. */
  env: Record<string, string>
  /** The `kid`s the provider publishes now, the signing one first. */
  kids(): string[]
  /** Adds a new signing key (it signs from now on); the old one is still published. */
  rotateKeys(): void
  /** Stops publishing every key but the newest. */
  retireOldKeys(): void
  /** The next token response carries an ID token changed as given. */
  tamperNextIdToken(tamper: IdTokenTamper): void
  /** While set, that endpoint answers 503, as a provider in the middle of an outage does. */
  setOutage(endpoint: 'discovery' | 'token' | 'userinfo' | null): void
  /** How many times the provider's JWKS was fetched. */
  jwksFetches(): number
  /** How many times the provider's discovery document was asked for (answered or not). */
  discoveries(): number
  /** How campusgate authenticated at the token endpoint, one entry per token request. */
  tokenAuthSeen(): TokenAuthMethod[]
  /**
   * A browser at the provider: opens the authorization URL, signs in as `member` and allows or
   * denies. Returns the URL the provider sends the browser back to (campusgate's callback).
   */
  signIn(authorizationUrl: string, options?: SignInOptions): Promise<string>
  close(): Promise<void>
}

export interface SignInOptions {
  member?: MemberName
  decision?: 'allow' | 'deny'
  /** The `error` a denial sends back: `access_denied`, or `consent_required` as LemonLDAP::NG's consent page does. */
  denial?: string
}

export type TokenAuthMethod = 'client_secret_basic' | 'client_secret_post'

type Jwk = Record<string, unknown> & { kid: string }

function newSigningKey(): Jwk {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  return { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), alg: 'RS256', use: 'sig' }
}

function signJwt(header: Record<string, unknown>, payload: Record<string, unknown>, key: Jwk) {
  const encode = (part: Record<string, unknown>) =>
    Buffer.from(JSON.stringify(part)).toString('base64url')
  const input = `${encode(header)}.${encode(payload)}`
  const signature = sign('sha256', Buffer.from(input), createPrivateKey({ key, format: 'jwk' }))
  return `${input}.${signature.toString('base64url')}`
}

function decodeJwtPart(part: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>
}

/** oidc-provider's storage interface over one Map, shared by every provider instance of a run. */
function createAdapterClass(store: Map<string, { payload: Record<string, unknown>; exp: number }>) {
  return class MapAdapter {
    constructor(readonly model: string) {}
    key(id: string) {
      return `${this.model}:${id}`
    }
    async upsert(id: string, payload: Record<string, unknown>, expiresIn: number) {
      store.set(this.key(id), { payload, exp: Date.now() + expiresIn * 1000 })
    }
    async find(id: string) {
      const entry = store.get(this.key(id))
      if (entry === undefined || entry.exp < Date.now()) return undefined
      return entry.payload
    }
    async findByUid(uid: string) {
      for (const [key, entry] of store)
        if (key.startsWith(`${this.model}:`) && entry.payload.uid === uid) return entry.payload
      return undefined
    }
    async findByUserCode() {
      return undefined
    }
    async consume(id: string) {
      const entry = store.get(this.key(id))
      if (entry !== undefined) entry.payload.consumed = Math.floor(Date.now() / 1000)
    }
    async destroy(id: string) {
      store.delete(this.key(id))
    }
    async revokeByGrantId(grantId: string) {
      for (const [key, entry] of store) if (entry.payload.grantId === grantId) store.delete(key)
    }
  }
}

async function readForm(request: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = []
  for await (const chunk of request) chunks.push(chunk as Buffer)
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'))
}

/**
 * LemonLDAP::NG takes the id and secret of a Basic header as written, without the form decoding
 * RFC 6749 §2.3.1 asks for. Re-encoded so that oidc-provider's decoding gives them back unchanged:
 * a client that form-encodes (`-` as `%2D`) is then compared as `%2D`, as there.
 */
function literalBasicCredentials(header: string): string {
  const match = /^Basic (.+)$/i.exec(header)
  if (match === null) return header
  const decoded = Buffer.from(match[1], 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  if (colon === -1) return header
  const asWritten = (part: string) => part.replace(/%/g, '%25').replace(/\+/g, '%2B')
  const credentials = `${asWritten(decoded.slice(0, colon))}:${asWritten(decoded.slice(colon + 1))}`
  return `Basic ${Buffer.from(credentials, 'utf8').toString('base64')}`
}

/** Changes a JSON answer's body before it is sent. */
function rewriteJson(
  response: ServerResponse,
  change: (body: Record<string, unknown>) => Record<string, unknown>,
): void {
  const end = response.end.bind(response) as (chunk?: unknown) => ServerResponse
  response.end = ((chunk?: unknown) => {
    if (typeof chunk !== 'string' && !Buffer.isBuffer(chunk)) return end(chunk)
    const text = JSON.stringify(change(JSON.parse(chunk.toString()) as Record<string, unknown>))
    response.setHeader('content-length', Buffer.byteLength(text))
    return end(text)
  }) as typeof response.end
}

/** Drops `iss` from the redirect to the client, as a provider without RFC 9207 sends it. */
function withoutIssInRedirect(response: ServerResponse): void {
  const setHeader = response.setHeader.bind(response)
  response.setHeader = (name: string, value: number | string | readonly string[]) => {
    // The provider's own redirects (to its interaction pages) are relative.
    if (name.toLowerCase() === 'location' && typeof value === 'string' && /^https?:/.test(value)) {
      const url = new URL(value)
      url.searchParams.delete('iss')
      return setHeader(name, url.toString())
    }
    return setHeader(name, value)
  }
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

function signInPage(uid: string, clientId: string): string {
  const choices = Object.entries(MEMBERS)
    .map(
      ([name, member], index) =>
        `<label><input type="radio" name="member" value="${name}"${index === 0 ? ' checked' : ''}> ${escapeHtml(member.name ?? member.sub)} (${escapeHtml(member.email ?? 'no email')})</label><br>`,
    )
    .join('\n')
  return `<!doctype html><html><head><title>University sign-in</title></head><body>
<h1>University sign-in</h1>
<p>${escapeHtml(clientId)} asks to confirm that you are a member of the university.</p>
<form method="post" action="/interaction/${escapeHtml(uid)}">
${choices}
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form></body></html>`
}

/** A cookie jar just big enough for one browser at one provider (paths ignored). */
class CookieJar {
  private readonly cookies = new Map<string, string>()
  store(response: Response): void {
    for (const header of response.headers.getSetCookie()) {
      const pair = header.split(';')[0] ?? ''
      const eq = pair.indexOf('=')
      if (eq > 0) this.cookies.set(pair.slice(0, eq), pair.slice(eq + 1))
    }
  }
  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ')
  }
}

export interface OidcProviderOptions {
  /** campusgate's callback, `${PUBLIC_BASE_URL}/authorize/university/callback`. */
  redirectUri: () => string
  /** Put email, name and affiliation in the ID token itself (as Entra ID and Keycloak do). */
  claimsInIdToken?: boolean
  /** The client authentication methods the provider offers (and advertises); the client is registered with the first. */
  tokenAuthMethods?: TokenAuthMethod[]
  /** `literal`: the id and secret of a Basic header are not form-decoded (LemonLDAP::NG). */
  basicCredentials?: 'decoded' | 'literal'
  /** The algorithm the ID tokens for campusgate are signed with (default RS256); HS* uses the client secret. */
  idTokenAlg?: string
  /** RFC 9207: `false` neither advertises nor sends `iss` (as Entra ID); default true. */
  issParameter?: boolean
}

export async function startOidcProvider(options: OidcProviderOptions): Promise<OidcProvider> {
  const store = new Map<string, { payload: Record<string, unknown>; exp: number }>()
  const Adapter = createAdapterClass(store)
  let keys: Jwk[] = [newSigningKey()]
  const foreignKey = newSigningKey()
  let tamper: IdTokenTamper | null = null
  let jwksFetches = 0
  let discoveries = 0
  let outage: 'discovery' | 'token' | 'userinfo' | null = null
  const tokenAuthSeen: TokenAuthMethod[] = []
  const tokenAuthMethods = options.tokenAuthMethods ?? ['client_secret_basic', 'client_secret_post']
  const idTokenAlg = options.idTokenAlg ?? 'RS256'

  const server: Server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const cookieKeys = [randomUUID()]

  function build(): Provider {
    return new Provider(issuer, {
      adapter: Adapter,
      jwks: { keys },
      cookies: { keys: cookieKeys },
      clientAuthMethods: tokenAuthMethods,
      enabledJWA: { idTokenSigningAlgValues: [...new Set(['RS256', idTokenAlg])] },
      clients: [
        {
          client_id: OIDC_CLIENT_ID,
          client_secret: OIDC_CLIENT_SECRET,
          // Tier 2's callback, and the operator console's university sign-in beside it.
          redirect_uris: [
            options.redirectUri(),
            options
              .redirectUri()
              .replace('/authorize/university/callback', '/console/sign-in/university/callback'),
          ],
          grant_types: ['authorization_code'],
          response_types: ['code'],
          token_endpoint_auth_method: tokenAuthMethods[0],
          id_token_signed_response_alg: idTokenAlg,
        },
      ],
      claims: {
        openid: ['sub'],
        email: ['email', 'email_verified'],
        profile: ['name', 'given_name', 'eduperson_affiliation'],
      },
      conformIdTokenClaims: options.claimsInIdToken !== true,
      features: { devInteractions: { enabled: false } },
      pkce: { required: () => true },
      ttl: {
        AccessToken: 3600,
        AuthorizationCode: 60,
        Grant: 3600,
        IdToken: 3600,
        Interaction: 3600,
        Session: 3600,
      },
      interactions: {
        url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}`,
      },
      async findAccount(_ctx: unknown, id: string) {
        const member = Object.values(MEMBERS).find((candidate) => candidate.sub === id)
        if (member === undefined) return undefined
        return {
          accountId: id,
          claims: async () => ({
            ...member,
            ...(member.email === undefined ? {} : { email_verified: true }),
          }),
        }
      },
    })
  }

  let provider = build()
  let handle = provider.callback()
  // The redirect URI is known only once campusgate listens; rebuilt when it changes.
  let builtFor = options.redirectUri()
  function rebuild(): void {
    builtFor = options.redirectUri()
    provider = build()
    handle = provider.callback()
  }

  async function interaction(request: IncomingMessage, response: ServerResponse, uid: string) {
    const details = await provider.interactionDetails(request, response)
    if (details.uid !== uid) throw new Error('interaction mismatch')
    if (request.method === 'GET') {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      response.end(signInPage(uid, String(details.params.client_id)))
      return
    }
    const form = await readForm(request)
    const member = MEMBERS[form.get('member') ?? '']
    let result: Record<string, unknown>
    if (form.get('decision') !== 'allow' || member === undefined) {
      result = {
        error: form.get('denial') ?? 'access_denied',
        error_description: 'the member declined',
      }
    } else {
      const grant = new provider.Grant({
        accountId: member.sub,
        clientId: String(details.params.client_id),
      })
      grant.addOIDCScope(String(details.params.scope))
      result = { login: { accountId: member.sub }, consent: { grantId: await grant.save() } }
    }
    const returnTo = await provider.interactionResult(request, response, result, {
      mergeWithLastSubmission: false,
    })
    response.writeHead(303, { location: returnTo })
    response.end()
  }

  /** Rewrites the ID token of a token response, as a provider gone wrong (or an attacker) would. */
  function interceptTokenResponse(response: ServerResponse, change: IdTokenTamper): void {
    rewriteJson(response, (body) => {
      if (typeof body.id_token !== 'string') return body
      const [header, payload] = body.id_token.split('.')
      const key = change.foreignKey === true ? foreignKey : keys[0]
      const idToken = signJwt(
        { ...decodeJwtPart(header), kid: key.kid },
        { ...decodeJwtPart(payload), ...change.claims },
        key,
      )
      return { ...body, id_token: idToken }
    })
  }

  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const path = (request.url ?? '').split('?')[0] ?? ''
    if (builtFor !== options.redirectUri()) rebuild()
    const match = /^\/interaction\/([^/]+)$/.exec(path)
    if (match !== null) {
      interaction(request, response, match[1]).catch((error: unknown) => {
        response.writeHead(400, { 'content-type': 'text/plain' })
        response.end(error instanceof Error ? error.message : 'bad interaction')
      })
      return
    }
    if (path === '/.well-known/openid-configuration') discoveries += 1
    // oidc-provider's default paths of these endpoints.
    const outagePaths = {
      discovery: '/.well-known/openid-configuration',
      token: '/token',
      userinfo: '/me',
    }
    if (outage !== null && path === outagePaths[outage]) {
      response.writeHead(503, { 'content-type': 'text/plain' })
      response.end('down for maintenance')
      return
    }
    if (path === '/jwks') jwksFetches += 1
    if (path === '/token') {
      const basic = request.headers.authorization
      tokenAuthSeen.push(basic === undefined ? 'client_secret_post' : 'client_secret_basic')
      if (basic !== undefined && options.basicCredentials === 'literal') {
        request.headers.authorization = literalBasicCredentials(basic)
      }
    }
    if (options.issParameter === false) {
      if (path === '/.well-known/openid-configuration') {
        rewriteJson(response, (body) => {
          delete body.authorization_response_iss_parameter_supported
          return body
        })
      }
      withoutIssInRedirect(response)
    }
    if (path === '/token' && tamper !== null) {
      interceptTokenResponse(response, tamper)
      tamper = null
    }
    handle(request, response)
  })

  const env = {
    UNIVERSITY_PROTOCOL: 'oidc',
    UNIVERSITY_ISSUER: issuer,
    UNIVERSITY_CLIENT_ID: OIDC_CLIENT_ID,
    UNIVERSITY_CLIENT_SECRET: OIDC_CLIENT_SECRET,
  }

  return {
    issuer,
    env,
    kids: () => keys.map((key) => key.kid),
    setOutage(endpoint) {
      outage = endpoint
    },
    rotateKeys() {
      keys = [newSigningKey(), ...keys]
      rebuild()
    },
    retireOldKeys() {
      keys = keys.slice(0, 1)
      rebuild()
    },
    tamperNextIdToken(change) {
      tamper = change
    },
    jwksFetches: () => jwksFetches,
    discoveries: () => discoveries,
    tokenAuthSeen: () => [...tokenAuthSeen],
    async signIn(
      authorizationUrl,
      { member = 'alice', decision = 'allow', denial = 'access_denied' } = {},
    ) {
      const jar = new CookieJar()
      let url = authorizationUrl
      let method = 'GET'
      let body: string | undefined
      // Follow the provider's own redirects until it sends the browser somewhere else.
      for (let hop = 0; hop < 10; hop += 1) {
        const response = await fetch(url, {
          method,
          redirect: 'manual',
          headers: {
            cookie: jar.header(),
            ...(body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' }),
          },
          body,
        })
        jar.store(response)
        const text = await response.text()
        if (response.status === 200 && url.includes('/interaction/')) {
          // The sign-in page: choose the member and decide.
          method = 'POST'
          body = new URLSearchParams({ member, decision, denial }).toString()
          continue
        }
        const location = response.headers.get('location')
        if (response.status < 300 || response.status >= 400 || location === null) {
          throw new Error(`provider answered ${response.status}: ${text.slice(0, 300)}`)
        }
        const next = new URL(location, url).toString()
        if (!next.startsWith(issuer)) return next
        url = next
        method = 'GET'
        body = undefined
      }
      throw new Error('too many redirects at the provider')
    },
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
