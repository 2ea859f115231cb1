import type { FastifyBaseLogger } from 'fastify'
import type { Kysely } from 'kysely'
import { TAKEN, type AccountChanges } from '../accounts/changes.js'
import { fromRequest, type Audit } from '../audit/audit.js'
import type { Clock } from '../clock.js'
import type { IdentityBinding } from '../config.js'
import type { Database } from '../db/schema.js'
import type { Cipher } from '../lib/encryption.js'
import { hashSecret, newId } from '../lib/secrets.js'
import type { UniversityIdentity } from './oidc-client.js'
import type { CallbackRequest, Completion, UniversityProtocol } from './protocol.js'
import { findOpenAttempt, transitionAttempt } from './store.js'

// The tier-2 callback, whatever the protocol: the steps every protocol shares around the one it
// speaks (protocol.ts), and the one neutral answer.

export type CallbackOutcome = 'linked' | 'denied' | 'failed' | 'taken' | 'ignored'

/** A callback as the route read it (protocol.ts). */
export type CallbackInput = CallbackRequest

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
  /** The protocol the university speaks (UNIVERSITY_PROTOCOL). */
  protocol: UniversityProtocol
}

export interface Callback {
  /** The identity provider's callback; never throws (the endpoint always answers 200). */
  handle(input: CallbackInput): Promise<CallbackResult>
}

/** A university identity's `binding`: one identity is the pair of issuer and subject. */
export function bindingOf(identity: UniversityIdentity): string {
  return hashSecret(`${identity.issuer}\n${identity.subject}`)
}

/** The callback of the configured protocol, over the steps every protocol shares. */
export function createCallback(options: CallbackOptions): Callback {
  const { db, clock, log, protocol } = options

  /** docs/decisions.md, "Tier 2 round trip": a refused callback is logged as a security event, secrets aside. */
  function logRefusal(reason: string, input: CallbackInput, state: string | undefined): void {
    log.warn(
      { event: 'university-callback-refused', reason, state: state?.slice(0, 128), ip: input.ip },
      'university callback refused',
    )
  }

  /** A callback that changes nothing: logged, and recorded in the trail on its own. */
  async function refuse(
    reason: string,
    input: CallbackInput,
    state: string | undefined,
    userId: string | null = null,
  ): Promise<CallbackResult> {
    logRefusal(reason, input, state)
    await options.audit.record(db, {
      type: 'university-refused',
      origin: fromRequest(input.ip),
      userId,
      // The user the callback names (`state`), whoever sent it: the actor is the caller's address.
      openId: userId === null ? (state?.slice(0, 128) ?? null) : null,
      detail: { reason },
    })
    return IGNORED
  }

  /** The attempt ends without a link: the user declined, or the proof failed. */
  async function endWithout(
    attempt: { id: string; user_id: string },
    from: 'redirected' | 'exchanging',
    end: { denied: boolean; reason?: string },
    input: CallbackInput,
    boundToBrowser: boolean,
  ): Promise<CallbackResult | null> {
    const won = await options.changes.endAttempt({
      attemptId: attempt.id,
      userId: attempt.user_id,
      from,
      to: end.denied ? 'denied' : 'failed',
      ...(end.reason === undefined ? {} : { reason: end.reason }),
      origin: fromRequest(input.ip),
    })
    if (!won) return null
    log[end.denied ? 'info' : 'warn'](
      {
        event: end.denied ? 'university-link-denied' : 'university-link-failed',
        attemptId: attempt.id,
        ...(end.reason === undefined ? {} : { reason: end.reason }),
      },
      end.denied ? 'user denied authorization' : 'university link failed',
    )
    return { outcome: end.denied ? 'denied' : 'failed', boundToBrowser }
  }

  /** The last step of every protocol: record the token and identity, or find it taken. */
  async function finish(
    attempt: { id: string; user_id: string },
    proved: Extract<Completion, { kind: 'linked' }>,
    input: CallbackInput,
    state: string,
    boundToBrowser: boolean,
  ): Promise<CallbackResult> {
    const { identity } = proved
    const doneAt = clock.now().getTime()
    const exclusive = options.identityBinding === 'exclusive' && identity !== null
    const linked = await options.changes.link({
      link: {
        attemptId: attempt.id,
        userId: attempt.user_id,
        identityId: newId(),
        protocol: protocol.id,
        encryptedToken: proved.token === null ? null : options.cipher.encrypt(proved.token),
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
      return refuse('attempt ended during the token exchange', input, state, attempt.user_id)
    }
    if (linked.result === 'taken') {
      // Audited with the change (the attempt ended `taken`).
      logRefusal(TAKEN, input, state)
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

  async function handle(input: CallbackInput): Promise<CallbackResult> {
    const reading = await protocol.read(input)
    if (reading.kind === 'refuse') return refuse(reading.reason, input, input.params.state)
    const { state, cookie } = reading
    const now = clock.now().getTime()
    const attempt = await findOpenAttempt(
      db,
      state,
      cookie === null ? null : hashSecret(cookie),
      now,
    )
    if (attempt === null) return refuse('no attempt in progress for this browser', input, state)
    const boundToBrowser = cookie !== null
    if (reading.denial !== null) {
      const ended = await endWithout(attempt, 'redirected', reading.denial, input, boundToBrowser)
      return ended ?? refuse('attempt already handled', input, state, attempt.user_id)
    }
    // Claim before the proof is checked: of two deliveries of one callback, only one proceeds.
    if (!(await transitionAttempt(db, attempt.id, 'redirected', 'exchanging', now))) {
      return refuse('attempt already handled', input, state, attempt.user_id)
    }
    const proved = await protocol.complete(input, { state, cookie })
    if (proved.kind !== 'linked') {
      const end =
        proved.kind === 'denied'
          ? { denied: true, ...(proved.reason === undefined ? {} : { reason: proved.reason }) }
          : { denied: false, reason: proved.reason }
      const ended = await endWithout(attempt, 'exchanging', end, input, boundToBrowser)
      return ended ?? refuse('attempt already handled', input, state, attempt.user_id)
    }
    return finish(attempt, proved, input, state, boundToBrowser)
  }

  return {
    async handle(input) {
      try {
        return await handle(input)
      } catch (error) {
        // The seed answers the callback 200 in every case, a database outage included: the
        // provider learns nothing, the attempt stays unfinished until it expires.
        log.error({ err: error, event: 'university-callback-failed' }, 'university callback failed')
        return IGNORED
      }
    },
  }
}
