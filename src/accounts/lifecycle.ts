import type { Queryable } from '../db/schema.js'
import type { Events } from '../events/emitter.js'
import type { SessionEndReason, UnlinkReason } from '../events/types.js'
import { abandonMailOfCodes, deleteMailOfUser } from '../mail/outbox.js'
import { deleteActiveDaysOfUser, type SessionStore } from '../sessions/store.js'
import { isLive, utcDayOf, type TouchRule } from '../sessions/touch-rule.js'
import { deleteCodesOfUser, endOpenAttemptsOfUser } from '../university/store.js'
import {
  deleteUser,
  isSuspended,
  lockUser,
  lockUserOfSession,
  restoreUser,
  suspendUser,
} from '../users/store.js'
import { nullifyCredentials } from '../identities/store.js'
import { findPerson, whoIs, type MessengerLogin, type PersonFound } from './people.js'

/*
 * The steps of every change that writes more than one domain's tables, one function each, in a
 * transaction `changes.ts` opens; tier 2's are in university.ts, the import's in import.ts. Each
 * reads top to bottom; only `changes.ts` (the unit of work, which also writes the audit event and
 * wakes the workers) calls them, and `npm run deps` refuses any other import of these modules
 * (.dependency-cruiser.cjs). The rules they follow are in docs/decisions.md.
 *
 * Lock order (docs/architecture.md): each function first locks the user's row (the upsert of
 * registration does so by writing it), then touches the user's other rows. Two of them racing for
 * one user therefore queue on that row instead of deadlocking on PostgreSQL.
 *
 * Lifecycle events (`events`, docs/webhooks.md) are written here too, in the
 * same transaction, under that lock, in the order docs/webhooks.md gives for one action. With webhooks off
 * (`events.enabled` false) nothing is read or written for them.
 */

/** What every step is given besides its own arguments. */
export interface StepContext {
  now: number
  events: Events
}

/** The sessions of every user, as the steps that start and end them see them. */
export interface SessionPolicy {
  store: SessionStore
  /** SESSIONS_PER_USER: a registration past it ends the user's least recently used session. */
  perUser: number
  /** Which sessions are live (an expired one counts toward the cap no longer, pruned or not). */
  rule: TouchRule
}

/** A registration's login, and the ids a new person and a new identity would take. */
export interface NewLogin {
  userId: string
  identityId: string
  login: MessengerLogin
}

export interface NewSession {
  id: string
  keyHash: string
  expiresAt: number
  /** The device label: the registration's `device`, else its `User-Agent`; at most 256 characters. */
  device: string | null
}

/** What a registration did: whose session it started, and what it ended or found on the way. */
export interface Registered extends PersonFound {
  /** The sessions past SESSIONS_PER_USER it ended, least recently used first. */
  rotated: string[]
}

/**
 * Tier 1: finds the person the login names (people.ts: the identity, a unionid it shares, or a
 * new person) and starts a new session of that identity (docs/sessions.md, "Devices"). Past
 * SESSIONS_PER_USER live sessions of the person, their least recently used ones end (`rotation`);
 * below it no other session ends, and the university link stays whatever happens.
 */
export async function registerUser(
  trx: Queryable,
  {
    login,
    session,
    sessions,
    linkByUnionId,
    now,
    events,
  }: {
    login: NewLogin
    session: NewSession
    sessions: SessionPolicy
    /** IDENTITY_LINK_BY_UNIONID. */
    linkByUnionId: boolean
  } & StepContext,
): Promise<Registered> {
  const found = await findPerson(trx, { ...login, linkByUnionId, now })
  const { userId } = found
  // Under the person's row lock (findPerson took it): a suspension that committed first is seen,
  // and one that comes later waits for this registration and then ends its session too.
  if (found.person !== 'new' && (await isSuspended(trx, userId))) throw new UserSuspended()
  const live =
    found.person === 'new'
      ? []
      : (await sessions.store.ofUser(trx, userId)).filter((other) =>
          isLive(sessions.rule, other, now),
        )
  // Most recently used first: what lies past the cap, with room for the new one, ends.
  const pastCap = live.slice(Math.max(0, sessions.perUser - 1))
  const ended = new Set(
    (
      await sessions.store.end(
        trx,
        pastCap.map((other) => other.id),
      )
    ).map((other) => other.id),
  )
  const rotated = pastCap.filter((other) => ended.has(other.id))
  await sessions.store.create(trx, [
    { ...session, userId, identityId: found.identityId, createdAt: now, touchedAt: now },
  ])
  // Registering is a use of the new key: the day is marked, since its first touch comes tomorrow.
  await sessions.store.markActive(trx, userId, utcDayOf(now))
  if (events.enabled) {
    const who = { userId, openId: login.login.openId }
    if (found.person === 'new') await events.emit(trx, who, { type: 'user.created' }, now)
    for (const other of rotated) {
      await emitEnded(trx, events, { userId, openId: other.openId }, other.id, 'rotation', now)
    }
    await emitStarted(trx, events, who, { ...session, ...login.login }, now)
  }
  return { ...found, rotated: rotated.map((other) => other.id) }
}

/**
 * A registration of a suspended person (docs/sessions.md, "Suspended people"): thrown inside the
 * transaction, so whatever the registration wrote (a refreshed or joined identity) is rolled back.
 */
export class UserSuspended extends Error {
  constructor() {
    super('the person is suspended')
    this.name = 'UserSuspended'
  }
}

/** Why sessions end other than by rotation or erasure. */
export type EndReason = 'logout' | 'expiry' | 'revoked' | 'suspended'

/**
 * Logout, revocation (an operator) and expiry of one session, found by its id; its user and
 * whether that was the user's last live session, or `null` when the session was already gone.
 */
export async function endSession(
  trx: Queryable,
  args: { sessionId: string; reason: EndReason; sessions: SessionPolicy } & StepContext,
): Promise<{ userId: string; last: boolean } | null> {
  const userId = await lockUserOfSession(trx, args.sessionId)
  if (userId === null) return null
  const ended = await endLocked(trx, { ...args, userId, which: [args.sessionId] })
  return ended === null ? null : { userId, last: ended.last }
}

type EndArgs = {
  userId: string
  which: readonly string[] | 'all'
  reason: EndReason
  sessions: SessionPolicy
} & StepContext

/**
 * Ends the user's sessions `which` names (ids, or every one), each with its `session.ended`.
 * When none of the user's sessions lives on, the user's messenger session key and university token
 * are nullified and every pending confirmation link dies (docs/sessions.md, "Ending a session"); while
 * another lives they stay, so the other device keeps its tier. The ids ended and whether that was
 * the last live session; `null` when there is no such user or nothing was left to end.
 */
export async function endSessionsOfUser(
  trx: Queryable,
  args: EndArgs,
): Promise<{ ended: string[]; last: boolean } | null> {
  return (await lockUser(trx, args.userId)) ? endLocked(trx, args) : null
}

/** `endSessionsOfUser` once the user's row is locked. */
async function endLocked(
  trx: Queryable,
  { userId, which, reason, sessions, now, events }: EndArgs,
): Promise<{ ended: string[]; last: boolean } | null> {
  const ofUser = await sessions.store.ofUser(trx, userId)
  const targets = which === 'all' ? ofUser : ofUser.filter((one) => which.includes(one.id))
  const ended = new Set(
    (
      await sessions.store.end(
        trx,
        targets.map((one) => one.id),
      )
    ).map((one) => one.id),
  )
  if (ended.size === 0) return null
  const last = !ofUser.some((one) => !ended.has(one.id) && isLive(sessions.rule, one, now))
  const person = events.enabled ? await whoIs(trx, userId) : null
  if (last) {
    await nullifyCredentials(trx, userId, now)
    await retirePendingRegistration(trx, userId, now)
  }
  if (person !== null) {
    // Each session's events name the openId it was registered with; the link's, the person's.
    for (const one of targets) {
      if (ended.has(one.id)) {
        await emitEnded(trx, events, { userId, openId: one.openId }, one.id, reason, now)
      }
    }
    if (last && person.linked) await emitUnlinked(trx, events, person, reason, now)
  }
  return { ended: [...ended], last }
}

export type Who = { userId: string; openId: string }

/**
 * `session.started` of a registered (or imported) session, naming the app and platform it was
 * registered from (an imported one's app is not known).
 */
export function emitStarted(
  trx: Queryable,
  events: Events,
  who: Who,
  session: { id: string; expiresAt: number; appId: string | null; platform: string },
  now: number,
): Promise<void> {
  return events.emit(
    trx,
    who,
    {
      type: 'session.started',
      data: {
        sessionId: session.id,
        expiresAt: new Date(session.expiresAt).toISOString(),
        ...(session.appId === null ? {} : { appId: session.appId }),
        platform: session.platform,
      },
    },
    now,
  )
}

function emitEnded(
  trx: Queryable,
  events: Events,
  who: Who,
  sessionId: string,
  reason: SessionEndReason,
  now: number,
): Promise<void> {
  return events.emit(trx, who, { type: 'session.ended', data: { sessionId, reason } }, now)
}

export function emitUnlinked(
  trx: Queryable,
  events: Events,
  who: Who,
  reason: UnlinkReason,
  now: number,
): Promise<void> {
  return events.emit(trx, who, { type: 'university.unlinked', data: { reason } }, now)
}

/**
 * Ends the user's registration codes and unfinished attempts, and abandons the undelivered mails
 * that carry those codes: their links would only answer 401.
 */
export async function retirePendingRegistration(
  trx: Queryable,
  userId: string,
  now: number,
): Promise<void> {
  const codeIds = await deleteCodesOfUser(trx, userId)
  await abandonMailOfCodes(trx, codeIds, now)
  await endOpenAttemptsOfUser(trx, userId, now)
}

/**
 * An operator suspends the person (docs/console.md, "Suspending a user"): every session ends as
 * "Revoke all sessions" ends them (`session.ended` reason `suspended`; the messenger session keys
 * and the university link go with the last one, `university.unlinked` reason `suspended`), then
 * `user.suspended`. Nothing else of theirs is deleted. The sessions it ended; `null` when there is
 * no such user, `'already'` when they were suspended already (nothing written).
 */
export async function suspendPerson(
  trx: Queryable,
  args: { userId: string; reason: string | null; sessions: SessionPolicy } & StepContext,
): Promise<{ ended: string[] } | 'already' | null> {
  const { userId, reason, now, events } = args
  if (!(await lockUser(trx, userId))) return null
  if (!(await suspendUser(trx, userId, { reason, now }))) return 'already'
  const ended = await endLocked(trx, { ...args, which: 'all', reason: 'suspended' })
  if (events.enabled) {
    const person = await whoIs(trx, userId)
    if (person !== null) {
      await events.emit(trx, person, { type: 'user.suspended', data: { reason } }, now)
    }
  }
  return { ended: ended?.ended ?? [] }
}

/**
 * An operator lifts the person's suspension: `user.restored`. `null` when there is no such user,
 * `'not-suspended'` when there was no suspension to lift (nothing written).
 */
export async function restorePerson(
  trx: Queryable,
  { userId, now, events }: { userId: string } & StepContext,
): Promise<'restored' | 'not-suspended' | null> {
  if (!(await lockUser(trx, userId))) return null
  if (!(await restoreUser(trx, userId, now))) return 'not-suspended'
  if (events.enabled) {
    const person = await whoIs(trx, userId)
    if (person !== null) await events.emit(trx, person, { type: 'user.restored' }, now)
  }
  return 'restored'
}

/**
 * Erasure: the user's mails (sent or queued) go, then the user with everything that cascades.
 * Returns the ids of the deleted mails, whose copies outside the database the caller discards;
 * `null` when there was no such user. The events say so in their documented order
 * (docs/webhooks.md): each session ended, the link gone, the user erased.
 */
export async function eraseUser(
  trx: Queryable,
  { userId, sessions, now, events }: { userId: string; sessions: SessionPolicy } & StepContext,
): Promise<string[] | null> {
  if (!(await lockUser(trx, userId))) return null
  if (events.enabled) {
    const person = await whoIs(trx, userId)
    if (person !== null) {
      for (const session of await sessions.store.ofUser(trx, userId)) {
        await emitEnded(trx, events, { userId, openId: session.openId }, session.id, 'erasure', now)
      }
      if (person.linked) await emitUnlinked(trx, events, person, 'erasure', now)
      await events.emit(trx, person, { type: 'user.erased' }, now)
    }
  }
  const mailIds = await deleteMailOfUser(trx, userId)
  // Identities, sessions, codes and attempts go with the user row (foreign keys cascade).
  await deleteUser(trx, userId)
  // After the user row: a touch that held the session until then has written its mark by now.
  await deleteActiveDaysOfUser(trx, userId)
  return mailIds
}
