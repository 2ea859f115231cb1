import { createHash } from 'node:crypto'
import * as oidc from 'openid-client'
import type { Clock } from '../clock.js'
import { redact } from '../lib/redact.js'

/** The university identity a round trip proved. Fields the provider did not give are absent. */
export interface UniversityIdentity {
  /** Who vouches for the subject: the OIDC issuer, or the UCL-API user-data origin. */
  issuer: string
  /** Stable at that issuer: OIDC `sub`, UCL-API `upi`. */
  subject: string
  email?: string
  name?: string
  isStudent?: boolean
}

export interface ProviderTokens {
  accessToken: string
  refreshToken?: string
}

export type OidcOutcome =
  | { kind: 'linked'; identity: UniversityIdentity; tokens: ProviderTokens }
  | { kind: 'denied' }
  | { kind: 'failed'; reason: string }

/** The per-attempt values of the authorization request: PKCE verifier and nonce. */
export interface AttemptSecrets {
  codeVerifier: string
  nonce: string
}

/** What the provider sent back to the redirect URI. */
export interface OidcCallbackParams {
  code?: string
  state?: string
  iss?: string
  error?: string
}

export interface OidcClient {
  /** The authorization endpoint with client_id, state, PKCE (S256), nonce and the scopes. */
  authorizationUrl(state: string, secrets: AttemptSecrets): Promise<string>
  /**
   * RFC 9207: the callback's `iss` must be the discovered issuer. A missing `iss` is accepted
   * only from a provider that does not advertise the parameter (Entra ID does not).
   */
  issuerAccepted(iss: string | undefined): Promise<boolean>
  /** Exchanges the code (PKCE) and verifies the ID token: issuer, audience, signature, nonce, expiry. */
  complete(
    params: OidcCallbackParams,
    expected: AttemptSecrets & { state: string },
  ): Promise<OidcOutcome>
}

/** The identity provider could not be discovered: the link cannot be followed right now. */
export class ProviderUnavailableError extends Error {
  constructor(options?: { cause?: unknown }) {
    super('university provider unavailable', options)
    this.name = 'ProviderUnavailableError'
  }
}

export interface OidcClientOptions {
  issuer: string
  clientId: string
  clientSecret: string
  /** `${PUBLIC_BASE_URL}/authorize/university/callback`, registered at the provider. */
  redirectUri: string
  scopes: string
  timeoutMs: number
  /** An `http:` issuer (a development provider); never in production. */
  allowInsecureRequests: boolean
  clock: Clock
  fetch?: typeof fetch
}

/**
 * The PKCE verifier and the nonce of an attempt, derived from its cookie (256 random bits the
 * browser holds; the database has only its SHA-256). Nothing recoverable is stored: a database
 * dump gives neither, and only the browser that opened the link can complete the exchange.
 */
export function attemptSecrets(attemptCookie: string): AttemptSecrets {
  const derive = (label: string) =>
    createHash('sha256').update(`campusgate-${label}:${attemptCookie}`, 'utf8').digest('base64url')
  return { codeVerifier: derive('pkce'), nonce: derive('nonce') }
}

/** Student status from the claims a provider may release; absent when none says anything. */
export function studentStatus(claims: Record<string, unknown>): boolean | undefined {
  if (typeof claims.is_student === 'boolean') return claims.is_student
  const affiliations = [claims.eduperson_affiliation, claims.eduperson_scoped_affiliation]
    .flatMap((value): unknown[] => (Array.isArray(value) ? value : [value]))
    .filter((value): value is string => typeof value === 'string')
    // Scoped values read `student@ucl.ac.uk`.
    .map((value) => (value.split('@')[0] ?? '').toLowerCase())
  if (affiliations.length === 0) return undefined
  return affiliations.includes('student')
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined
}

/** A reason fit for the logs: the error's kind and code, never a token, claim set or secret. */
function describeFailure(error: unknown, secrets: string[]): string {
  if (!(error instanceof Error)) return 'unknown failure'
  const code = (error as { code?: unknown }).code
  const oauthError = (error as { error?: unknown }).error
  const parts = [
    error.name,
    typeof code === 'string' ? code : '',
    typeof oauthError === 'string' ? `(${oauthError})` : '',
    error.message,
  ]
  return redact(
    parts
      .filter((part) => part !== '')
      .join(' ')
      .slice(0, 300),
    secrets,
  )
}

interface KeyCache {
  jwks: oidc.JWKS
  /** When the keys were fetched, on the app's clock. */
  fetchedAtMs: number
}

/**
 * OpenID Connect relying party over openid-client v6: discovery of the issuer, authorization
 * code flow with PKCE and a nonce, ID token signatures verified even from the token endpoint.
 */
export function createOidcClient(options: OidcClientOptions): OidcClient {
  const doFetch = options.fetch ?? fetch
  const customFetch: oidc.CustomFetch = (url, init) => doFetch(url, init)
  const timeoutSeconds = Math.max(1, Math.ceil(options.timeoutMs / 1000))
  const auth = oidc.ClientSecretBasic(options.clientSecret)
  let discovered: Promise<oidc.ServerMetadata> | null = null
  let keyCache: KeyCache | null = null

  function metadata(): Promise<oidc.ServerMetadata> {
    discovered ??= oidc
      .discovery(new URL(options.issuer), options.clientId, undefined, auth, {
        [oidc.customFetch]: customFetch,
        execute: options.allowInsecureRequests ? [oidc.allowInsecureRequests] : [],
        timeout: timeoutSeconds,
      })
      .then((config) => config.serverMetadata())
      .catch((error: unknown) => {
        // Not cached: the next request tries again.
        discovered = null
        throw new ProviderUnavailableError({ cause: error })
      })
    return discovered
  }

  /**
   * A configuration per use, so openid-client's key cache is the one we hand it. Its age is
   * measured on the app's clock: once the keys are a minute old, an unknown `kid` makes
   * openid-client fetch them again (a rotation at the provider is followed within a minute),
   * and after five minutes they are fetched anyway.
   */
  function configuration(server: oidc.ServerMetadata): oidc.Configuration {
    const config = new oidc.Configuration(server, options.clientId, undefined, auth)
    config[oidc.customFetch] = customFetch
    config.timeout = timeoutSeconds
    if (options.allowInsecureRequests) oidc.allowInsecureRequests(config)
    oidc.enableNonRepudiationChecks(config)
    if (keyCache !== null) {
      const ageSeconds = Math.floor((options.clock.now().getTime() - keyCache.fetchedAtMs) / 1000)
      oidc.setJwksCache(config, {
        jwks: keyCache.jwks,
        uat: Math.floor(Date.now() / 1000) - Math.max(0, ageSeconds),
      })
    }
    return config
  }

  function rememberKeys(config: oidc.Configuration, before: number | undefined): void {
    const cache = oidc.getJwksCache(config)
    if (cache === undefined) return
    const changed = JSON.stringify(cache.jwks) !== JSON.stringify(keyCache?.jwks)
    if (keyCache === null || cache.uat !== before || changed) {
      keyCache = { jwks: cache.jwks, fetchedAtMs: options.clock.now().getTime() }
    }
  }

  return {
    async authorizationUrl(state, secrets) {
      const server = await metadata()
      if (server.authorization_endpoint === undefined) {
        throw new ProviderUnavailableError({ cause: new Error('no authorization_endpoint') })
      }
      // The seed's shape, `?client_id=<id>&state=<openId>`, then the OpenID Connect parameters.
      const url = new URL(server.authorization_endpoint)
      const parameters: [string, string][] = [
        ['client_id', options.clientId],
        ['state', state],
        ['response_type', 'code'],
        ['redirect_uri', options.redirectUri],
        ['scope', options.scopes],
        ['code_challenge', await oidc.calculatePKCECodeChallenge(secrets.codeVerifier)],
        ['code_challenge_method', 'S256'],
        ['nonce', secrets.nonce],
      ]
      for (const [name, value] of parameters) url.searchParams.set(name, value)
      return url.toString()
    },

    async issuerAccepted(iss) {
      let server: oidc.ServerMetadata
      try {
        server = await metadata()
      } catch {
        return false
      }
      if (iss === undefined) return server.authorization_response_iss_parameter_supported !== true
      return iss === server.issuer
    },

    async complete(params, expected) {
      if (params.error !== undefined) {
        return params.error === 'access_denied'
          ? { kind: 'denied' }
          : { kind: 'failed', reason: `provider answered error=${params.error.slice(0, 60)}` }
      }
      if (params.code === undefined) return { kind: 'failed', reason: 'no code' }
      let server: oidc.ServerMetadata
      try {
        server = await metadata()
      } catch {
        return { kind: 'failed', reason: 'provider discovery failed' }
      }
      // Only what the provider sent, on the registered redirect URI: never the request's Host.
      const callback = new URL(options.redirectUri)
      for (const name of ['code', 'state', 'iss'] as const) {
        const value = params[name]
        if (value !== undefined) callback.searchParams.set(name, value)
      }
      const config = configuration(server)
      const before = oidc.getJwksCache(config)?.uat
      try {
        const tokens = await oidc.authorizationCodeGrant(config, callback, {
          pkceCodeVerifier: expected.codeVerifier,
          expectedNonce: expected.nonce,
          expectedState: expected.state,
          idTokenExpected: true,
        })
        rememberKeys(config, before)
        const claims: Record<string, unknown> = { ...tokens.claims() }
        if (
          (text(claims.email) === undefined || text(claims.name) === undefined) &&
          server.userinfo_endpoint !== undefined
        ) {
          const userInfo = await oidc.fetchUserInfo(config, tokens.access_token, String(claims.sub))
          for (const [name, value] of Object.entries(userInfo)) claims[name] ??= value
        }
        const email = text(claims.email)
        const name = text(claims.name)
        const isStudent = studentStatus(claims)
        return {
          kind: 'linked',
          identity: {
            issuer: String(claims.iss),
            subject: String(claims.sub),
            ...(email === undefined ? {} : { email }),
            ...(name === undefined ? {} : { name }),
            ...(isStudent === undefined ? {} : { isStudent }),
          },
          tokens: {
            accessToken: tokens.access_token,
            ...(tokens.refresh_token === undefined ? {} : { refreshToken: tokens.refresh_token }),
          },
        }
      } catch (error) {
        rememberKeys(config, before)
        return {
          kind: 'failed',
          reason: describeFailure(error, [
            params.code,
            options.clientSecret,
            expected.codeVerifier,
          ]),
        }
      }
    },
  }
}
