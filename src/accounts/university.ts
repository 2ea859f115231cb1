import type { Queryable } from '../db/schema.js'
import type { UniversityView, UnlinkReason } from '../events/types.js'
import { enqueueMail } from '../mail/outbox.js'
import { enforceMailLimits, type MailLimits } from '../mail/caps.js'
import type { Mail } from '../mail/transport.js'
import { insertCode, transitionAttempt } from '../university/store.js'
import {
  findBindingHolder,
  lapseLinkOfUser,
  lapseLinksOfBinding,
  setUniversityLink,
  type UniversityIdentityRecord,
} from '../identities/store.js'
import { lockUser } from '../users/store.js'
import { emitUnlinked, retirePendingRegistration, type StepContext } from './lifecycle.js'
import { whoIs } from './people.js'

/*
 * The steps of tier 2's changes, one function each, in a transaction `changes.ts` opens (as the
 * steps of lifecycle.ts): issuing a registration code, ending an attempt without a link, the link
 * itself and its removal. Each locks the user's row before the user's other rows.
 */

/** A new registration code, its hash only, valid until `expiresAt`. */
export interface NewCode {
  id: string
  userId: string
  codeHash: string
  expiresAt: number
}

/**
 * Tier 2, step 1: a new code supersedes the user's older ones, and its mail is queued with it.
 * Over a mail cap (`limits`) it throws and nothing changes; the count runs after the user's row is
 * locked, so one user's requests are counted one at a time.
 */
export async function issueRegistrationCode(
  trx: Queryable,
  {
    code,
    mail,
    now,
    limits,
  }: { code: NewCode; mail: Mail; now: number; limits: MailLimits | null },
): Promise<void> {
  await lockUser(trx, code.userId)
  if (limits !== null) await enforceMailLimits(trx, limits, code.userId, mail.to, now)
  await retirePendingRegistration(trx, code.userId, now)
  await insertCode(trx, code, now)
  await enqueueMail(
    trx,
    mail,
    { now, expiresAt: code.expiresAt },
    { userId: code.userId, registrationCodeId: code.id },
  )
}

/** How a round trip ends without a link: the user declined at the provider, or it failed. */
export type AttemptEnd = 'denied' | 'failed'

/**
 * The callback's end without a link: the attempt moves from `from` to `to`. False when another
 * delivery of the callback moved it first.
 */
export function endAttempt(
  trx: Queryable,
  {
    attemptId,
    from,
    to,
    now,
  }: { attemptId: string; from: 'redirected' | 'exchanging'; to: AttemptEnd; now: number },
): Promise<boolean> {
  return transitionAttempt(trx, attemptId, from, to, now)
}

export type LinkResult =
  { result: 'linked' } | { result: 'taken'; holderUserId: string } | { result: 'ended' }

export interface UniversityLinkChange {
  attemptId: string
  userId: string
  /** A new university identity's id, used if the person has none yet. */
  identityId: string
  /** The protocol that proved it (UNIVERSITY_PROTOCOL). */
  protocol: string
  /** The provider's token, encrypted; null when the protocol gives none (CAS, SAML). */
  encryptedToken: string | null
  identity: UniversityIdentityRecord | null
  /** Exclusive binding: the identity's binding value; null under shared binding. */
  binding: string | null
  /** UNIVERSITY_LINK_MAX_AGE: a holder's link made at or before this has lapsed; null: never. */
  lapsedBefore: number | null
}

/**
 * Tier 2, last step: completes the exchanging attempt and records the token and the identity on
 * the user. Under exclusive binding (`binding` set) an identity that another user's live link holds
 * is `taken`: the attempt ends so and nothing is linked. A holder's link older than
 * `lapsedBefore` (UNIVERSITY_LINK_MAX_AGE) has lapsed and lets go. `ended` when the attempt was
 * ended meanwhile (a logout during the token exchange): nothing is linked.
 */
export async function linkUniversityAccount(
  trx: Queryable,
  { link, now, events }: { link: UniversityLinkChange } & StepContext,
): Promise<LinkResult> {
  if (!(await lockUser(trx, link.userId))) return { result: 'ended' }
  if (link.binding !== null) {
    if (link.lapsedBefore !== null) {
      const lapsed = await lapseLinksOfBinding(trx, link.binding, link.lapsedBefore, now)
      for (const holder of lapsed) {
        const person = events.enabled ? await whoIs(trx, holder) : null
        if (person !== null) await emitUnlinked(trx, events, person, 'lapsed', now)
      }
    }
    const holderUserId = await findBindingHolder(trx, link.binding, link.userId)
    if (holderUserId !== null) {
      const won = await transitionAttempt(trx, link.attemptId, 'exchanging', 'taken', now)
      return won ? { result: 'taken', holderUserId } : { result: 'ended' }
    }
  }
  if (!(await transitionAttempt(trx, link.attemptId, 'exchanging', 'completed', now))) {
    return { result: 'ended' }
  }
  await setUniversityLink(trx, { ...link, id: link.identityId }, now)
  await retirePendingRegistration(trx, link.userId, now)
  const person = events.enabled ? await whoIs(trx, link.userId) : null
  if (person !== null) {
    await events.emit(
      trx,
      person,
      { type: 'university.linked', data: { university: universityView(link.identity, now) } },
      now,
    )
  }
  return { result: 'linked' }
}

/** The identity as `GET /session` shows it (sessions/service.ts): what the provider did not give is absent. */
function universityView(
  identity: UniversityIdentityRecord | null,
  linkedAt: number,
): UniversityView {
  return {
    ...(identity?.subject === undefined ? {} : { subject: identity.subject }),
    ...(identity?.email === undefined ? {} : { email: identity.email }),
    ...(identity?.name === undefined ? {} : { name: identity.name }),
    ...(identity?.isStudent === undefined ? {} : { isStudent: identity.isStudent }),
    linkedAt: new Date(linkedAt).toISOString(),
  }
}

/**
 * The user's university link made at or before `linkedBefore` goes: UNIVERSITY_LINK_MAX_AGE
 * (`lapsed`: the tier already counted it lapsed) or an operator (`revoked`, any link until now).
 * The session stays, at tier 1; the member proves membership anew. Whether a link went.
 */
export async function unlinkUniversityAccount(
  trx: Queryable,
  {
    userId,
    linkedBefore,
    reason,
    now,
    events,
  }: {
    userId: string
    linkedBefore: number
    /** A lapse, or an operator's unlink. */
    reason: Extract<UnlinkReason, 'lapsed' | 'revoked'>
  } & StepContext,
): Promise<boolean> {
  if (!(await lockUser(trx, userId))) return false
  if (!(await lapseLinkOfUser(trx, userId, linkedBefore, now))) return false
  const person = events.enabled ? await whoIs(trx, userId) : null
  if (person !== null) await emitUnlinked(trx, events, person, reason, now)
  return true
}
