import proxyAddr from '@fastify/proxy-addr'
import type { FastifyBaseLogger } from 'fastify'
import type { Kysely } from 'kysely'
import { TAKEN, type AccountChanges } from '../accounts/changes.js'
import { fromRequest, type Audit } from '../audit/audit.js'
import type { Clock } from '../clock.js'
import type { CallbackBinding, IdentityBinding } from '../config.js'
import type { Database } from '../db/schema.js'
import type { Cipher } from '../lib/encryption.js'
import { hashSecret, MAX_SECRET_LENGTH, secretsEqual } from '../lib/secrets.js'
import type { UniversityClient } from './client.js'
import { attemptSecrets, type OidcClient, type UniversityIdentity } from './oidc-client.js'
import { describeProviderAnswer, userDeclined } from './oidc-failure.js'
import { findOpenAttempt, transitionAttempt } from './store.js'

// The tier-2 callback, both protocols: its types, the checks they share, the one neutral answer.

/** `taken`: the university account is already linked to another messenger user. */
export type CallbackOutcome = 'linked' | 'denied' | 'failed' | 'taken' | 'ignored'

export interface CallbackInput {
  clientId?: string
  clientSecret?: string
  state?: string
  code?: string
  result?: string
  /** OpenID Connect: the issuer (RFC 9207) and an error such as `access_denied`. */
  iss?: string
  error?: string
  errorDescription?: string
  /** The attempt cookie the browser brought, if any. */
  attemptCookie: string | null
  /** The caller's address (after TRUST_PROXY). */
  ip: string
}

export interface CallbackResult {
  outcome: CallbackOutcome
  /** True only when the request carried the cookie of the attempt it acted on. */
  boundToBrowser: boolean
  /** The university account the round trip signed in as (linked or taken), for the page. */
  account?: { name?: string; email?: string }
}

/** The one answer for a callback that is not acted on, whatever the reason. */
export const IGNORED: CallbackResult = Object.freeze({ outcome: 'ignored', boundToBrowser: false })

export interface CallbackOptions {
  db: Kysely<Database>
  clock: Clock
  log: FastifyBaseLogger
  identityBinding: IdentityBinding
  linkMaxAgeMs: number | null
  /** Encrypts the provider's token: the app's features may call the university with it later. */
  cipher: Cipher
  /** The trail of what the callback refused (a change is audited by `changes`). */
  audit: Audit
  /** Every change the callback makes (a denial, a failure, the link), with its audit event. */
  changes: AccountChanges
  /** The UCL-API token exchange and user data. */
  client: UniversityClient
  /** The OpenID Connect client; when set, the callback speaks OpenID Connect. */
  oidc: OidcClient | null
  clientId: string
  clientSecret: string
  callbackBinding: CallbackBinding
  callbackAllowedIps: readonly string[]
}

export interface Callback {
  /** The identity provider's callback; never throws (the endpoint always answers 200). */
  handle(input: CallbackInput): Promise<CallbackResult>
}

/** The value of `users.university_binding`: one identity is the pair of issuer and subject. */
export function bindingOf(identity: UniversityIdentity): string {
  return hashSecret(`${identity.issuer}\n${identity.subject}`)
}

/** The callback of the configured protocol, over the steps both protocols share. */
export function createCallback(options: CallbackOptions): Callback {
  const { db, clock, log, client } = options
  const callerAllowed = proxyAddr.compile([...options.callbackAllowedIps])

  /** docs/decisions.md, "Tier 2 round trip": a refused callback is logged as a security event, secrets aside. */
  function logRefusal(reason: string, input: CallbackInput): void {
    log.warn(
      {
        event: 'university-callback-refused',
        reason,
        state: input.state?.slice(0, 128),
        ip: input.ip,
      },
      'university callback refused',
    )
  }

  /** A callback that changes nothing: logged, and recorded in the trail on its own. */
  async function refuse(
    reason: string,
    input: CallbackInput,
    userId: string | null = null,
  ): Promise<CallbackResult> {
    logRefusal(reason, input)
    await options.audit.record(db, {
      type: 'university-refused',
      origin: fromRequest(input.ip),
      userId,
      // The user the callback names (`state`), whoever sent it: the actor is the caller's address.
      openId: userId === null ? (input.state?.slice(0, 128) ?? null) : null,
      detail: { reason },
    })
    return IGNORED
  }

  async function fail(
    attempt: { id: string; user_id: string },
    reason: string,
    boundToBrowser: boolean,
    input: CallbackInput,
  ) {
    await options.changes.endAttempt({
      attemptId: attempt.id,
      userId: attempt.user_id,
      from: 'exchanging',
      to: 'failed',
      reason,
      origin: fromRequest(input.ip),
    })
    log.warn(
      { event: 'university-link-failed', attemptId: attempt.id, reason },
      'university link failed',
    )
    return { outcome: 'failed', boundToBrowser } as const
  }

  /** The last step of both protocols: record the token and identity, or find it taken. */
  async function finish(
    attempt: { id: string; user_id: string },
    token: string,
    identity: UniversityIdentity | null,
    input: CallbackInput,
    boundToBrowser: boolean,
  ): Promise<CallbackResult> {
    const doneAt = clock.now().getTime()
    const exclusive = options.identityBinding === 'exclusive' && identity !== null
    const linked = await options.changes.link({
      link: {
        attemptId: attempt.id,
        userId: attempt.user_id,
        encryptedToken: options.cipher.encrypt(token),
        identity,
        binding: exclusive ? bindingOf(identity) : null,
        lapsedBefore: options.linkMaxAgeMs === null ? null : doneAt - options.linkMaxAgeMs,
      },
      origin: fromRequest(input.ip),
      now: doneAt,
    })
    const account =
      identity === null
        ? undefined
        : {
            ...(identity.name === undefined ? {} : { name: identity.name }),
            ...(identity.email === undefined ? {} : { email: identity.email }),
          }
    if (linked.result === 'ended') {
      return refuse('attempt ended during the token exchange', input, attempt.user_id)
    }
    if (linked.result === 'taken') {
      // Audited with the change (the attempt ended `taken`).
      logRefusal(TAKEN, input)
      log.warn(
        {
          event: 'university-identity-taken',
          attemptId: attempt.id,
          userId: attempt.user_id,
          holderUserId: linked.holderUserId,
        },
        'university account already linked to another user',
      )
      return { outcome: 'taken', boundToBrowser, ...(account === undefined ? {} : { account }) }
    }
    log.info({ event: 'university-linked', attemptId: attempt.id }, 'university account linked')
    return { outcome: 'linked', boundToBrowser, ...(account === undefined ? {} : { account }) }
  }

  /** UCL-API: client_id, client_secret, state, the cookie (or the caller's address) decide. */
  async function handleUclCallback(input: CallbackInput): Promise<CallbackResult> {
    if (input.clientId === undefined || !secretsEqual(input.clientId, options.clientId)) {
      return refuse('client_id does not match', input)
    }
    if (
      input.clientSecret !== undefined &&
      !secretsEqual(input.clientSecret, options.clientSecret)
    ) {
      return refuse('client_secret does not match', input)
    }
    if (input.state === undefined || input.state === '' || input.state.length > MAX_SECRET_LENGTH) {
      return refuse('state missing or malformed', input)
    }
    const denial = input.result === 'denied' || input.code === undefined || input.code === ''
    // Without the cookie, only the provider's own secret tells its call from a forged one that
    // carries a code obtained elsewhere; a denial links nothing, so it may come without it.
    if (options.callbackBinding === 'none' && !denial && input.clientSecret === undefined) {
      return refuse('client_secret required with UNIVERSITY_CALLBACK_BINDING=none', input)
    }
    let cookieHash: string | null = null
    if (options.callbackBinding === 'cookie') {
      if (input.attemptCookie === null || input.attemptCookie.length > MAX_SECRET_LENGTH) {
        return refuse('no attempt cookie', input)
      }
      cookieHash = hashSecret(input.attemptCookie)
    } else if (!callerAllowed(input.ip, 0)) {
      return refuse('caller not in UNIVERSITY_CALLBACK_ALLOWED_IPS', input)
    }

    const now = clock.now().getTime()
    const attempt = await findOpenAttempt(db, input.state, cookieHash, now)
    if (attempt === null) return refuse('no attempt in progress for this browser', input)
    const boundToBrowser = cookieHash !== null

    if (denial || input.code === undefined) {
      const won = await options.changes.endAttempt({
        attemptId: attempt.id,
        userId: attempt.user_id,
        from: 'redirected',
        to: 'denied',
        origin: fromRequest(input.ip),
      })
      if (!won) return refuse('attempt already handled', input, attempt.user_id)
      log.info(
        { event: 'university-link-denied', attemptId: attempt.id },
        'user denied authorization',
      )
      return { outcome: 'denied', boundToBrowser }
    }

    // Claim before the exchange: of two deliveries of one callback, only one proceeds.
    if (!(await transitionAttempt(db, attempt.id, 'redirected', 'exchanging', now))) {
      return refuse('attempt already handled', input, attempt.user_id)
    }
    const exchange = await client.exchangeCode(input.code, input.state)
    if (!exchange.ok) return fail(attempt, exchange.reason, boundToBrowser, input)
    // UNIVERSITY_USERINFO_URL names the member; without it the link records no identity.
    const user = await client.fetchUser(exchange.token)
    if (user !== null && !user.ok) return fail(attempt, user.reason, boundToBrowser, input)
    return finish(attempt, exchange.token, user?.identity ?? null, input, boundToBrowser)
  }

  /** OpenID Connect: no client_id or secret rides on the redirect; cookie, state and iss decide. */
  async function handleOidcCallback(input: CallbackInput, oidc: OidcClient) {
    const state = input.state
    const cookie = input.attemptCookie
    if (state === undefined || state === '' || state.length > MAX_SECRET_LENGTH) {
      return refuse('state missing or malformed', input)
    }
    if (cookie === null || cookie.length > MAX_SECRET_LENGTH) {
      return refuse('no attempt cookie', input)
    }
    const issuerRefused = await oidc.checkIssuer(input.iss)
    if (issuerRefused !== null) return refuse(issuerRefused, input)
    const now = clock.now().getTime()
    const attempt = await findOpenAttempt(db, state, hashSecret(cookie), now)
    if (attempt === null) return refuse('no attempt in progress for this browser', input)

    if (input.error !== undefined || input.code === undefined || input.code === '') {
      const denied = userDeclined(input.error)
      const reason = describeProviderAnswer(input.error, input.errorDescription)
      const won = await options.changes.endAttempt({
        attemptId: attempt.id,
        userId: attempt.user_id,
        from: 'redirected',
        to: denied ? 'denied' : 'failed',
        reason,
        origin: fromRequest(input.ip),
      })
      if (!won) return refuse('attempt already handled', input, attempt.user_id)
      log[denied ? 'info' : 'warn'](
        {
          event: denied ? 'university-link-denied' : 'university-link-failed',
          attemptId: attempt.id,
          reason,
        },
        denied ? 'user denied authorization' : 'provider answered an error',
      )
      return { outcome: denied ? 'denied' : 'failed', boundToBrowser: true } as const
    }
    if (!(await transitionAttempt(db, attempt.id, 'redirected', 'exchanging', now))) {
      return refuse('attempt already handled', input)
    }
    const outcome = await oidc.complete(
      { code: input.code, state, ...(input.iss === undefined ? {} : { iss: input.iss }) },
      { ...attemptSecrets(cookie), state },
    )
    if (outcome.kind !== 'linked')
      return fail(attempt, outcome.kind === 'denied' ? 'denied' : outcome.reason, true, input)
    return finish(attempt, outcome.tokens.accessToken, outcome.identity, input, true)
  }

  return {
    async handle(input) {
      try {
        return options.oidc === null
          ? await handleUclCallback(input)
          : await handleOidcCallback(input, options.oidc)
      } catch (error) {
        // The seed answers the callback 200 in every case, a database outage included: the
        // provider learns nothing, the attempt stays unfinished until it expires.
        log.error({ err: error, event: 'university-callback-failed' }, 'university callback failed')
        return IGNORED
      }
    },
  }
}
