import { createHash } from 'node:crypto'
import * as oauth from 'oauth4webapi'
import * as oidc from 'openid-client'
import type { Clock } from '../clock.js'
import type { TokenAuthMethod } from '../config.js'
import { describeCallFailure, describeProviderAnswer, userDeclined } from './oidc-failure.js'

/** Why a callback whose `iss` is missing (from a provider that sends it) or foreign is refused. */
export const WRONG_ISS = 'iss missing or not the issuer'

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
  error_description?: string
}

export interface OidcClient {
  /** The authorization endpoint with client_id, state, PKCE (S256), nonce and the scopes. */
  authorizationUrl(state: string, secrets: AttemptSecrets): Promise<string>
  /**
   * RFC 9207: the callback's `iss` must be the discovered issuer. A missing `iss` is accepted
   * only from a provider that does not advertise the parameter (Entra ID does not). The rule is
   * the library's (the check `complete`'s grant makes again), asked before anything changes so
   * that a refused callback changes nothing. Null when accepted; otherwise why not, for the log:
   * a wrong `iss`, or the issuer's discovery failing (then nothing can be checked, and the
   * callback is refused as well).
   */
  checkIssuer(iss: string | undefined): Promise<string | null>
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

/** One discovered issuer, shared by its relying parties (tier 2 and the console's sign-in). */
export interface OidcIssuer {
  /** A relying party of this issuer whose callback is `redirectUri` (registered at the provider). */
  client(redirectUri: string): OidcClient
}

export interface OidcIssuerOptions {
  issuer: string
  clientId: string
  clientSecret: string
  scopes: string
  /** UNIVERSITY_TOKEN_AUTH_METHOD; null: chosen from the discovery document. */
  tokenAuthMethod: TokenAuthMethod | null
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

/**
 * docs/university-providers.md: `client_secret_post` when the provider advertises it, else `client_secret_basic` (RFC 8414's
 * default). Post sends the id and secret as they are; Basic form-encodes them first (RFC 6749
 * §2.3.1, `-` becomes `%2D`), and some providers compare the encoded text with the secret.
 */
export function tokenAuthMethodFor(
  configured: TokenAuthMethod | null,
  server: Pick<oidc.ServerMetadata, 'token_endpoint_auth_methods_supported'>,
): TokenAuthMethod {
  if (configured !== null) return configured
  return server.token_endpoint_auth_methods_supported?.includes('client_secret_post') === true
    ? 'client_secret_post'
    : 'client_secret_basic'
}

/**
 * How long one discovery's metadata serves before the issuer is discovered again, on the app's
 * clock. The provider's keys are not tied to it: openid-client keeps them apart, with a cache age
 * (keys older than five minutes are fetched again) and a cooldown (an ID token with an unknown
 * key id fetches them again once they are a minute old, so a key rotation is followed within a
 * minute and a forged `kid` cannot make us hammer the provider), both on the system clock; the
 * keys are carried to each new discovery's configuration.
 */
const DISCOVERY_MAX_AGE_MS = 60_000

interface Discovered {
  config: oidc.Configuration
  /** When it was discovered (or last kept after a failed rediscovery), on the app's clock. */
  atMs: number
}

/**
 * OpenID Connect relying parties over openid-client v6: discovery of the issuer, authorization
 * code flow with PKCE and a nonce, ID token signatures verified even from the token endpoint.
 * One discovered `Configuration` serves every relying party of the issuer until it is a minute
 * old; openid-client keeps the provider's keys with it.
 */
export function createOidcIssuer(options: OidcIssuerOptions): OidcIssuer {
  const doFetch = options.fetch ?? fetch
  const customFetch: oidc.CustomFetch = (url, init) => doFetch(url, init)
  const timeoutSeconds = Math.max(1, Math.ceil(options.timeoutMs / 1000))
  // The method depends on the discovery document, which the authentication is handed each time.
  const post = oidc.ClientSecretPost(options.clientSecret)
  const basic = oidc.ClientSecretBasic(options.clientSecret)
  const clientAuth: oidc.ClientAuth = (server, client, body, headers) => {
    const method = tokenAuthMethodFor(options.tokenAuthMethod, server)
    ;(method === 'client_secret_post' ? post : basic)(server, client, body, headers)
  }
  let current: Discovered | null = null
  let pending: Promise<oidc.Configuration> | null = null

  async function discover(): Promise<oidc.Configuration> {
    const config = await oidc.discovery(
      new URL(options.issuer),
      options.clientId,
      undefined,
      clientAuth,
      {
        [oidc.customFetch]: customFetch,
        execute: [
          ...(options.allowInsecureRequests ? [oidc.allowInsecureRequests] : []),
          oidc.enableNonRepudiationChecks,
        ],
        timeout: timeoutSeconds,
      },
    )
    // The keys the last configuration fetched serve on (openid-client ages them), unless the
    // provider now publishes its keys elsewhere.
    const previous = current?.config
    const keys = previous === undefined ? undefined : oidc.getJwksCache(previous)
    if (
      keys !== undefined &&
      previous?.serverMetadata().jwks_uri === config.serverMetadata().jwks_uri
    ) {
      oidc.setJwksCache(config, keys)
    }
    return config
  }

  function configuration(): Promise<oidc.Configuration> {
    const now = options.clock.now().getTime()
    if (current !== null && now - current.atMs < DISCOVERY_MAX_AGE_MS) {
      return Promise.resolve(current.config)
    }
    pending ??= discover()
      .then((config) => {
        current = { config, atMs: options.clock.now().getTime() }
        return config
      })
      .catch((error: unknown) => {
        // A provider that answered before keeps serving (its keys still follow openid-client's
        // cache), and discovery is tried again a minute later. Never discovered: unavailable,
        // and the next request tries again.
        if (current !== null) {
          current = { config: current.config, atMs: options.clock.now().getTime() }
          return current.config
        }
        throw new ProviderUnavailableError({ cause: error })
      })
      .finally(() => {
        pending = null
      })
    return pending
  }

  /** Why `configuration()` failed, as the failure line of the discovery call (the cause, unwrapped). */
  function discoveryFailure(
    error: unknown,
    secrets: readonly (string | undefined)[],
  ): Promise<string> {
    const cause = error instanceof ProviderUnavailableError ? error.cause : error
    return describeCallFailure('discovery', cause, secrets)
  }

  return {
    client: (redirectUri) => ({
      async authorizationUrl(state, secrets) {
        const config = await configuration()
        // The seed's shape, `?client_id=<id>&state=<openId>`, then the OpenID Connect parameters.
        const parameters = {
          client_id: options.clientId,
          state,
          response_type: 'code',
          redirect_uri: redirectUri,
          scope: options.scopes,
          code_challenge: await oidc.calculatePKCECodeChallenge(secrets.codeVerifier),
          code_challenge_method: 'S256',
          nonce: secrets.nonce,
        }
        try {
          return oidc.buildAuthorizationUrl(config, parameters).toString()
        } catch (error) {
          // No usable authorization endpoint in the discovery document.
          throw new ProviderUnavailableError({ cause: error })
        }
      },

      async checkIssuer(iss) {
        let config: oidc.Configuration
        try {
          config = await configuration()
        } catch (error) {
          return discoveryFailure(error, [options.clientSecret])
        }
        const response = new URLSearchParams(iss === undefined ? {} : { iss })
        try {
          oauth.validateAuthResponse(
            config.serverMetadata(),
            { client_id: options.clientId },
            response,
            oauth.skipStateCheck,
          )
          return null
        } catch {
          return WRONG_ISS
        }
      },

      async complete(params, expected) {
        const secrets = [params.code, options.clientSecret, expected.codeVerifier]
        if (params.error !== undefined || params.code === undefined) {
          return userDeclined(params.error)
            ? { kind: 'denied' }
            : {
                kind: 'failed',
                reason: describeProviderAnswer(params.error, params.error_description, secrets),
              }
        }
        let config: oidc.Configuration
        try {
          config = await configuration()
        } catch (error) {
          return { kind: 'failed', reason: await discoveryFailure(error, secrets) }
        }
        const server = config.serverMetadata()
        // Only what the provider sent, on the registered redirect URI: never the request's Host.
        // The grant checks `iss` (RFC 9207) and `state` before it exchanges the code.
        const callback = new URL(redirectUri)
        for (const name of ['code', 'state', 'iss'] as const) {
          const value = params[name]
          if (value !== undefined) callback.searchParams.set(name, value)
        }
        const method = tokenAuthMethodFor(options.tokenAuthMethod, server)
        // Named in the failure line: which call to the provider failed.
        let call = `token request (${method})`
        try {
          const tokens = await oidc.authorizationCodeGrant(config, callback, {
            pkceCodeVerifier: expected.codeVerifier,
            expectedNonce: expected.nonce,
            expectedState: expected.state,
            idTokenExpected: true,
          })
          const claims: Record<string, unknown> = { ...tokens.claims() }
          if (
            (text(claims.email) === undefined || text(claims.name) === undefined) &&
            server.userinfo_endpoint !== undefined
          ) {
            call = 'userinfo request'
            const userInfo = await oidc.fetchUserInfo(
              config,
              tokens.access_token,
              String(claims.sub),
            )
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
          return { kind: 'failed', reason: await describeCallFailure(call, error, secrets) }
        }
      },
    }),
  }
}
