import { createHash, generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Clock } from '../clock.js'
import { stringField } from '../lib/coerce.js'
import { generateSecret, secretsEqual } from '../lib/secrets.js'
import { sendAuthorisePage, sendAuthoriseProblem } from './authorise-page.js'
import { memberFor, type SandboxMember } from './members.js'

const CODE_TTL_MS = 60_000
const TOKEN_TTL_SECONDS = 600
const MAX_ENTRIES = 10_000

export interface SandboxOidcOptions {
  /** The issuer: `${PUBLIC_BASE_URL}/_sandbox/oidc`. */
  issuer: () => string
  clientId: string
  clientSecret: string
  callbackUrl: () => string
  clock: Clock
}

interface Grant {
  member: SandboxMember
  nonce: string
  codeChallenge: string
  expiresAt: number
  used: boolean
}

function claimsOf(member: SandboxMember): Record<string, unknown> {
  return {
    sub: member.upi,
    email: member.email,
    email_verified: true,
    name: member.full_name,
    given_name: member.given_name,
    eduperson_affiliation: [member.is_student ? 'student' : 'staff', 'member'],
  }
}

function signJwt(payload: Record<string, unknown>, key: KeyObject, kid: string): string {
  const encode = (part: unknown) => Buffer.from(JSON.stringify(part)).toString('base64url')
  const input = `${encode({ alg: 'RS256', typ: 'JWT', kid })}.${encode(payload)}`
  return `${input}.${sign('sha256', Buffer.from(input), key).toString('base64url')}`
}

/** Oldest entries go first once a map holds too many: the sandbox keeps everything in memory. */
function remember<T>(map: Map<string, T>, key: string, value: T): void {
  map.set(key, value)
  if (map.size > MAX_ENTRIES) map.delete(map.keys().next().value!)
}

/**
 * A minimal OpenID Provider for the sandbox (`UNIVERSITY_PROTOCOL=oidc` with no issuer
 * configured): discovery, an Allow / Deny page with a choice of member, the code flow with PKCE
 * (S256) and a nonce, RS256 ID tokens, JWKS, userinfo and RFC 9207 `iss` on every answer.
 */
export function oidcRoutes(app: FastifyInstance, options: SandboxOidcOptions): void {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const kid = randomUUID()
  const jwk = { ...publicKey.export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' }
  const codes = new Map<string, Grant>()
  const accessTokens = new Map<string, SandboxMember>()
  const config = { versionedMediaType: false }
  const schema = { hide: true }

  function redirect(reply: FastifyReply, params: Record<string, string>): FastifyReply {
    const location = new URL(options.callbackUrl())
    for (const [name, value] of Object.entries({ ...params, iss: options.issuer() }))
      location.searchParams.set(name, value)
    return reply.header('cache-control', 'no-store').redirect(location.toString(), 302)
  }

  function problemOf(source: unknown): string | null {
    if (stringField(source, 'client_id') !== options.clientId) return 'Unknown client_id.'
    if (stringField(source, 'redirect_uri') !== options.callbackUrl())
      return 'redirect_uri is not registered.'
    if (stringField(source, 'response_type') !== 'code') return 'response_type must be code.'
    if (stringField(source, 'code_challenge_method') !== 'S256') return 'PKCE S256 is required.'
    if (!/^[A-Za-z0-9_-]{43}$/.test(stringField(source, 'code_challenge')))
      return 'code_challenge is missing.'
    if (stringField(source, 'state') === '') return 'state is missing.'
    return null
  }

  app.get('/oidc/.well-known/openid-configuration', { config, schema }, async () => {
    const issuer = options.issuer()
    return {
      issuer,
      authorization_endpoint: `${issuer}/authorize`,
      token_endpoint: `${issuer}/token`,
      jwks_uri: `${issuer}/jwks`,
      userinfo_endpoint: `${issuer}/userinfo`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      scopes_supported: ['openid', 'email', 'profile'],
      claims_supported: ['sub', 'email', 'email_verified', 'name', 'given_name'],
      authorization_response_iss_parameter_supported: true,
    }
  })

  app.get('/oidc/jwks', { config, schema }, async () => ({ keys: [jwk] }))

  app.get('/oidc/authorize', { config, schema }, async (request, reply) => {
    const problem = problemOf(request.query)
    if (problem !== null) return sendAuthoriseProblem(request, reply, problem)
    const names = ['client_id', 'redirect_uri', 'response_type', 'state', 'nonce']
    return sendAuthorisePage(request, reply, {
      clientId: options.clientId,
      action: '/_sandbox/oidc/authorize/decision',
      hidden: [...names, 'code_challenge', 'code_challenge_method'].map(
        (name) => [name, stringField(request.query, name)] as const,
      ),
      protocol: 'oidc',
    })
  })

  app.post('/oidc/authorize/decision', { config, schema }, async (request, reply) => {
    const form = request.body
    const state = stringField(form, 'state')
    const member = memberFor(stringField(form, 'member'), state)
    const problem = problemOf(form) ?? (member === null ? 'No such member.' : null)
    if (problem !== null || member === null) {
      return sendAuthoriseProblem(request, reply, problem ?? 'No such member.')
    }
    if (stringField(form, 'decision') !== 'allow') {
      return redirect(reply, { error: 'access_denied', state })
    }
    const code = generateSecret()
    remember(codes, code, {
      member,
      nonce: stringField(form, 'nonce'),
      codeChallenge: stringField(form, 'code_challenge'),
      expiresAt: options.clock.now().getTime() + CODE_TTL_MS,
      used: false,
    })
    return redirect(reply, { code, state })
  })

  function clientAuthenticated(request: FastifyRequest): boolean {
    const basic = /^Basic (.+)$/i.exec(request.headers.authorization ?? '')
    let id = stringField(request.body, 'client_id')
    let secret = stringField(request.body, 'client_secret')
    if (basic !== null) {
      const decoded = Buffer.from(basic[1], 'base64').toString('utf8')
      const colon = decoded.indexOf(':')
      id = decodeURIComponent(decoded.slice(0, colon))
      secret = decodeURIComponent(decoded.slice(colon + 1))
    }
    const idOk = secretsEqual(id, options.clientId)
    const secretOk = secretsEqual(secret, options.clientSecret)
    return idOk && secretOk
  }

  app.post('/oidc/token', { config, schema }, async (request, reply) => {
    reply.header('cache-control', 'no-store')
    if (!clientAuthenticated(request)) return reply.code(401).send({ error: 'invalid_client' })
    const form = request.body
    const grant = codes.get(stringField(form, 'code'))
    const verifier = stringField(form, 'code_verifier')
    const challenge = createHash('sha256').update(verifier).digest('base64url')
    if (
      stringField(form, 'grant_type') !== 'authorization_code' ||
      grant === undefined ||
      grant.used ||
      grant.expiresAt < options.clock.now().getTime() ||
      stringField(form, 'redirect_uri') !== options.callbackUrl() ||
      !secretsEqual(challenge, grant.codeChallenge)
    ) {
      return reply.code(400).send({ error: 'invalid_grant' })
    }
    grant.used = true
    const accessToken = generateSecret()
    remember(accessTokens, accessToken, grant.member)
    // JWT times are wall-clock seconds: that is what every relying party checks them against.
    const now = Math.floor(Date.now() / 1000)
    const idToken = signJwt(
      {
        iss: options.issuer(),
        aud: options.clientId,
        iat: now,
        exp: now + TOKEN_TTL_SECONDS,
        ...(grant.nonce === '' ? {} : { nonce: grant.nonce }),
        ...claimsOf(grant.member),
      },
      privateKey,
      kid,
    )
    return {
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: TOKEN_TTL_SECONDS,
      id_token: idToken,
      scope: 'openid email profile',
    }
  })

  app.get('/oidc/userinfo', { config, schema }, async (request, reply) => {
    const token = /^Bearer (.+)$/i.exec(request.headers.authorization ?? '')?.[1] ?? ''
    const member = accessTokens.get(token)
    if (member === undefined) {
      return reply
        .code(401)
        .header('www-authenticate', 'Bearer error="invalid_token"')
        .send({ error: 'invalid_token' })
    }
    return claimsOf(member)
  })
}
