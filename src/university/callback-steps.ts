import type { FastifyBaseLogger } from 'fastify'
import type { Kysely } from 'kysely'
import { linkUniversityAccount } from '../accounts/lifecycle.js'
import { fromRequest, type Audit, type AuditEvent } from '../audit/audit.js'
import type { Clock } from '../clock.js'
import type { IdentityBinding } from '../config.js'
import type { AttemptStatus, Database } from '../db/schema.js'
import { inTransaction } from '../db/transaction.js'
import type { Events } from '../events/emitter.js'
import type { Cipher } from '../lib/encryption.js'
import { hashSecret, MAX_SECRET_LENGTH } from '../lib/secrets.js'
import { attemptSecrets, type OidcClient, type UniversityIdentity } from './oidc-client.js'
import { describeProviderAnswer, userDeclined } from './oidc-failure.js'
import type { CallbackInput, CallbackResult } from './service.js'
import { findOpenAttempt, transitionAttempt } from './store.js'

export interface CallbackStepsOptions {
  db: Kysely<Database>
  clock: Clock
  log: FastifyBaseLogger
  identityBinding: IdentityBinding
  linkMaxAgeMs: number | null
  /** Encrypts the provider's token: the app's features may call the university with it later. */
  cipher: Cipher
  audit: Audit
  /** Where `university.linked` (and a lapsed holder's `university.unlinked`) go. */
  events: Events
}

/** The value of `users.university_binding`: one identity is the pair of issuer and subject. */
export function bindingOf(identity: UniversityIdentity): string {
  return hashSecret(`${identity.issuer}\n${identity.subject}`)
}

/** The steps of the callback that both protocols share, and the OpenID Connect callback. */
export function createCallbackSteps(options: CallbackStepsOptions) {
  const { db, clock, log } = options
  const ignored: CallbackResult = { outcome: 'ignored', boundToBrowser: false }

  /** docs/decisions.md, "Tier 2 round trip": a refused callback changes nothing and is logged as a security event, secrets aside. */
  async function refuse(
    reason: string,
    input: CallbackInput,
    userId: string | null = null,
  ): Promise<CallbackResult> {
    const state = input.state?.slice(0, 128)
    log.warn(
      { event: 'university-callback-refused', reason, state, ip: input.ip },
      'university callback refused',
    )
    await options.audit.record(db, {
      type: 'university-refused',
      origin: fromRequest(input.ip),
      userId,
      // The user the callback names (`state`), whoever sent it: the actor is the caller's address.
      openId: userId === null ? (state ?? null) : null,
      detail: { reason },
    })
    return ignored
  }

  /**
   * Moves the attempt from `from` to `to` and records its audit event in one transaction: the
   * trail never tells of a denial or failure that did not happen, nor misses one that did. False
   * when another delivery moved the attempt first (nothing written).
   */
  function settle(
    attemptId: string,
    from: AttemptStatus,
    to: AttemptStatus,
    event: AuditEvent,
  ): Promise<boolean> {
    return inTransaction(db, async (trx) => {
      if (!(await transitionAttempt(trx, attemptId, from, to, clock.now().getTime()))) return false
      await options.audit.record(trx, event)
      return true
    })
  }

  async function fail(
    attempt: { id: string; user_id: string },
    reason: string,
    boundToBrowser: boolean,
    input: CallbackInput,
  ) {
    await settle(attempt.id, 'exchanging', 'failed', {
      type: 'university-failed',
      origin: fromRequest(input.ip),
      userId: attempt.user_id,
      detail: { reason: reason.slice(0, 200) },
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
    const linked = await inTransaction(db, async (trx) => {
      const done = await linkUniversityAccount(
        trx,
        {
          attemptId: attempt.id,
          userId: attempt.user_id,
          encryptedToken: options.cipher.encrypt(token),
          identity,
          binding: exclusive ? bindingOf(identity) : null,
          lapsedBefore: options.linkMaxAgeMs === null ? null : doneAt - options.linkMaxAgeMs,
        },
        doneAt,
        options.events,
      )
      if (done.result === 'linked') {
        await options.audit.record(trx, {
          type: 'university-linked',
          origin: fromRequest(input.ip),
          userId: attempt.user_id,
        })
      }
      return done
    })
    options.events.kick()
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
      await refuse('university account already linked to another account', input, attempt.user_id)
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
    if (!(await oidc.issuerAccepted(input.iss)))
      return refuse('iss missing or not the issuer', input)
    const now = clock.now().getTime()
    const attempt = await findOpenAttempt(db, state, hashSecret(cookie), now)
    if (attempt === null) return refuse('no attempt in progress for this browser', input)

    if (input.error !== undefined || input.code === undefined || input.code === '') {
      const denied = userDeclined(input.error)
      const reason = describeProviderAnswer(input.error, input.errorDescription)
      const won = await settle(attempt.id, 'redirected', denied ? 'denied' : 'failed', {
        type: denied ? 'university-denied' : 'university-failed',
        origin: fromRequest(input.ip),
        userId: attempt.user_id,
        ...(denied ? {} : { detail: { reason: reason.slice(0, 200) } }),
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

  return { refuse, settle, fail, finish, handleOidcCallback }
}
