import { latestEventTimes } from '../audit/store.js'
import type { Queryable } from '../db/schema.js'
import type { Events } from '../events/emitter.js'
import type { SessionEndReason, UniversityView } from '../events/types.js'
import { abandonMailOfCodes, deleteMailOfUser, enqueueMail } from '../mail/outbox.js'
import { enforceMailLimits, type MailLimits } from '../mail/caps.js'
import type { Mail } from '../mail/transport.js'
import {
  deleteActiveDaysOfUser,
  deleteSession,
  findSessionOfUser,
  findSessionVersions,
  insertSessions,
  replaceSession,
  touchSession,
  type SessionVersion,
} from '../sessions/store.js'
import {
  deleteCodesOfUser,
  endOpenAttemptsOfUser,
  insertCode,
  transitionAttempt,
} from '../university/store.js'
import {
  deleteUser,
  findBindingHolder,
  findUserForEvents,
  findUsersWithLapsedLinks,
  findUserVersions,
  insertUsersIfAbsent,
  lapseLinkOfUser,
  lapseLinksOfBinding,
  lockUser,
  lockUserOfSession,
  nullifyCredentials,
  setUniversityLink,
  upsertUser,
  type UniversityIdentityRecord,
  type UserVersion,
} from '../users/store.js'

/*
 * Every change that writes more than one domain's tables, one function each, in the caller's
 * transaction. Each reads top to bottom; the domain services own the transactions and call these.
 * The rules they follow are in docs/decisions.md.
 *
 * Lock order (docs/architecture.md): each function first locks the user's row (the upsert of
 * registration does so by writing it), then touches the user's other rows. Two of them racing for
 * one user therefore queue on that row instead of deadlocking on PostgreSQL.
 *
 * Lifecycle events (`events`, SPEC.md "Lifecycle events (webhooks)") are written here too, in the
 * same transaction, under that lock, in the order SPEC gives for one action. With webhooks off
 * (`events.enabled` false) nothing is read or written for them.
 */

/**
 * Tier 1: creates or refreshes the user and installs its one live session (ending any older one).
 * `created` tells a new user from a returning one (whose key this rotates).
 */
export async function registerUser(
  trx: Queryable,
  user: { id: string; openId: string; unionId: string | null; messengerSessionKey: string },
  session: { id: string; keyHash: string; expiresAt: number },
  now: number,
  events: Events,
): Promise<{ userId: string; created: boolean }> {
  const { id: userId } = await upsertUser(trx, user, now)
  const created = userId === user.id
  // The session this rotation ends: only the events need its id.
  const previous = events.enabled && !created ? await findSessionOfUser(trx, userId) : null
  await replaceSession(trx, { ...session, userId }, now)
  if (events.enabled) {
    const who = { userId, openId: user.openId }
    if (created) await events.emit(trx, who, { type: 'user.created' }, now)
    if (previous !== null) {
      await events.emit(
        trx,
        who,
        { type: 'session.ended', data: { sessionId: previous.id, reason: 'rotation' } },
        now,
      )
    }
    await events.emit(
      trx,
      who,
      {
        type: 'session.started',
        data: { sessionId: session.id, expiresAt: new Date(session.expiresAt).toISOString() },
      },
      now,
    )
  }
  return { userId, created }
}

/**
 * Logout, revocation (the CLI) and expiry: the session goes, the user's messenger session key and
 * university token are nullified, and every pending confirmation link dies. The session's user,
 * or `null` when the session was already gone.
 */
export async function endSession(
  trx: Queryable,
  sessionId: string,
  now: number,
  events: Events,
  reason: 'logout' | 'expiry' | 'revoked',
): Promise<string | null> {
  if ((await lockUserOfSession(trx, sessionId)) === null) return null
  const userId = await deleteSession(trx, sessionId)
  if (userId === null) return null
  const user = events.enabled ? await findUserForEvents(trx, userId) : null
  await nullifyCredentials(trx, userId, now)
  await retirePendingRegistration(trx, userId, now)
  if (user !== null) {
    await emitEnded(trx, events, { userId, openId: user.openId }, sessionId, reason, now)
    if (user.linked) {
      await events.emit(
        trx,
        { userId, openId: user.openId },
        { type: 'university.unlinked', data: { reason } },
        now,
      )
    }
  }
  return userId
}

function emitEnded(
  trx: Queryable,
  events: Events,
  who: { userId: string; openId: string },
  sessionId: string,
  reason: SessionEndReason,
  now: number,
): Promise<void> {
  return events.emit(trx, who, { type: 'session.ended', data: { sessionId, reason } }, now)
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
 * Tier 2, step 1: a new code supersedes the user's older ones, and its mail is queued with it.
 * Over a mail cap (`limits`) it throws and nothing changes; the count runs after the user's row is
 * locked, so one user's requests are counted one at a time.
 */
export async function issueRegistrationCode(
  trx: Queryable,
  code: { id: string; userId: string; codeHash: string; expiresAt: number },
  mail: Mail,
  now: number,
  limits: MailLimits | null = null,
): Promise<void> {
  await lockUser(trx, code.userId)
  if (limits !== null) await enforceMailLimits(trx, limits, code.userId, mail.to, now)
  await retirePendingRegistration(trx, code.userId, now)
  await insertCode(trx, code, now)
  await enqueueMail(
    trx,
    mail,
    { now, expiresAt: code.expiresAt },
    {
      userId: code.userId,
      registrationCodeId: code.id,
    },
  )
}

export type LinkResult =
  { result: 'linked' } | { result: 'taken'; holderUserId: string } | { result: 'ended' }

/**
 * Tier 2, last step: completes the exchanging attempt and records the token and the identity on
 * the user. Under exclusive binding (`binding` set) an identity that another user's live link holds
 * is `taken`: the attempt ends so and nothing is linked. A holder's link older than
 * `lapsedBefore` (UNIVERSITY_LINK_MAX_AGE) has lapsed and lets go. `ended` when the attempt was
 * ended meanwhile (a logout during the token exchange): nothing is linked.
 */
export async function linkUniversityAccount(
  trx: Queryable,
  link: {
    attemptId: string
    userId: string
    encryptedToken: string
    identity: UniversityIdentityRecord | null
    binding: string | null
    lapsedBefore: number | null
  },
  now: number,
  events: Events,
): Promise<LinkResult> {
  if (!(await lockUser(trx, link.userId))) return { result: 'ended' }
  if (link.binding !== null) {
    if (link.lapsedBefore !== null) {
      const lapsed = await lapseLinksOfBinding(trx, link.binding, link.lapsedBefore, now)
      for (const holder of lapsed) {
        await events.emit(
          trx,
          { userId: holder.id, openId: holder.openId },
          { type: 'university.unlinked', data: { reason: 'lapsed' } },
          now,
        )
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
  await setUniversityLink(trx, link.userId, link, now)
  await retirePendingRegistration(trx, link.userId, now)
  const user = events.enabled ? await findUserForEvents(trx, link.userId) : null
  if (user !== null) {
    await events.emit(
      trx,
      { userId: link.userId, openId: user.openId },
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
 * The users whose university link was made at or before `linkedBefore`, oldest first: those
 * `lapseUniversityLink` lets go. Read here so that sessions/ reaches the users table only through
 * this module.
 */
export function usersWithLapsedLinks(
  db: Queryable,
  linkedBefore: number,
  limit: number,
): Promise<string[]> {
  return findUsersWithLapsedLinks(db, linkedBefore, limit)
}

/**
 * UNIVERSITY_LINK_MAX_AGE: the user's link, made at or before `linkedBefore`, lapses (the tier
 * already counted it lapsed); the user proves membership anew. Whether it lapsed now.
 */
export async function lapseUniversityLink(
  trx: Queryable,
  userId: string,
  linkedBefore: number,
  now: number,
  events: Events,
): Promise<boolean> {
  if (!(await lockUser(trx, userId))) return false
  if (!(await lapseLinkOfUser(trx, userId, linkedBefore, now))) return false
  const user = events.enabled ? await findUserForEvents(trx, userId) : null
  if (user !== null) {
    await events.emit(
      trx,
      { userId, openId: user.openId },
      { type: 'university.unlinked', data: { reason: 'lapsed' } },
      now,
    )
  }
  return true
}

/**
 * Erasure: the user's mails (sent or queued) go, then the user with everything that cascades.
 * Returns the ids of the deleted mails, whose copies outside the database the caller discards.
 * The events say so in SPEC's order: the session ended, the link gone, the user erased.
 */
export async function eraseUser(
  trx: Queryable,
  userId: string,
  now: number,
  events: Events,
): Promise<string[]> {
  if (!(await lockUser(trx, userId))) return []
  if (events.enabled) {
    const user = await findUserForEvents(trx, userId)
    const session = await findSessionOfUser(trx, userId)
    if (user !== null) {
      const who = { userId, openId: user.openId }
      if (session !== null) await emitEnded(trx, events, who, session.id, 'erasure', now)
      if (user.linked) {
        await events.emit(
          trx,
          who,
          { type: 'university.unlinked', data: { reason: 'erasure' } },
          now,
        )
      }
      await events.emit(trx, who, { type: 'user.erased' }, now)
    }
  }
  const mailIds = await deleteMailOfUser(trx, userId)
  // Sessions, codes and attempts go with the user row (foreign keys cascade).
  await deleteUser(trx, userId)
  // After the user row: a touch that held the session until then has written its mark by now.
  await deleteActiveDaysOfUser(trx, userId)
  return mailIds
}

/** A live user of the original server, ready to be stored (docs/migrating-from-original.md). */
export interface OriginalUser {
  openId: string
  /** The messenger session key, encrypted. */
  messengerSessionKey: string
  /** SHA-256 of the original's session key, exactly as campusgate hashes its own keys. */
  keyHash: string
  /** When the original last saw the key (never later than the import's now). */
  lastUsed: number
  /** `lastUsed` + SESSION_TTL. */
  expiresAt: number
  /** Fresh ids for the rows this may create. */
  userId: string
  sessionId: string
}

/**
 * What the import does with one user of the original:
 * - `import`: campusgate does not know the user: it is created with its session.
 * - `extend`: campusgate holds the same key, live, with an earlier expiry than the original's.
 * - `replace`: campusgate holds another key (or none), and wrote the user before the original last
 *   saw this one: the original's key is the newer (issued there after an earlier import).
 * - `present`: campusgate already holds this key, or something newer: nothing changes.
 */
export type ImportDecision = 'import' | 'extend' | 'replace' | 'present'

export interface ImportPlan {
  user: OriginalUser
  decision: ImportDecision
  existing: UserVersion | null
  session: SessionVersion | null
}

function decideImport(
  user: OriginalUser,
  existing: UserVersion | null,
  session: SessionVersion | null,
  erasedAt: number | undefined,
  now: number,
): ImportDecision {
  // A user erased in campusgate after the original last issued its key is not brought back; the
  // trail remembers erasures (openId only) for AUDIT_RETENTION.
  if (existing === null)
    return erasedAt !== undefined && erasedAt >= user.lastUsed ? 'present' : 'import'
  if (session !== null && session.keyHash === user.keyHash) {
    // A session campusgate has let expire is never brought back.
    return session.expiresAt > now && user.expiresAt > session.expiresAt ? 'extend' : 'present'
  }
  // A logout, rotation, erasure or link in campusgate after the original last saw the key wins.
  return user.lastUsed > existing.updatedAt ? 'replace' : 'present'
}

/** Decides, reading only, what `importOriginalUsers` would do with each user (`--dry-run` too). */
export async function planOriginalImport(
  db: Queryable,
  users: readonly OriginalUser[],
  now: number,
): Promise<ImportPlan[]> {
  const existing = new Map(
    (
      await findUserVersions(
        db,
        users.map((user) => user.openId),
      )
    ).map((row) => [row.openId, row]),
  )
  const sessions = new Map(
    (
      await findSessionVersions(
        db,
        [...existing.values()].map((row) => row.id),
      )
    ).map((row) => [row.userId, row]),
  )
  const absent = users.filter((user) => !existing.has(user.openId)).map((user) => user.openId)
  const erased = await latestEventTimes(db, 'erasure', absent)
  return users.map((user) => {
    const found = existing.get(user.openId) ?? null
    const session = found === null ? null : (sessions.get(found.id) ?? null)
    const erasedAt = erased.get(user.openId)
    return {
      user,
      existing: found,
      session,
      decision: decideImport(user, found, session, erasedAt, now),
    }
  })
}

export interface ImportResult {
  openId: string
  userId: string | null
  outcome: ImportDecision
}

/**
 * Coming from the original server: stores its users (distinct openIds) in the caller's
 * transaction. New users and their sessions go in two statements; a user a registration created
 * meanwhile is left as it is. Users campusgate already holds are locked first, then decided again
 * on what the lock guards, and changed only when the original's key is the newer.
 */
export async function importOriginalUsers(
  trx: Queryable,
  users: readonly OriginalUser[],
  now: number,
  events: Events,
): Promise<ImportResult[]> {
  const plans = await planOriginalImport(trx, users, now)
  const results: ImportResult[] = []

  const fresh = plans.filter((plan) => plan.decision === 'import').map((plan) => plan.user)
  const created = new Set(
    (
      await insertUsersIfAbsent(
        trx,
        fresh.map((user) => ({ ...user, id: user.userId })),
        now,
      )
    ).map((row) => row.openId),
  )
  await insertSessions(
    trx,
    fresh
      .filter((user) => created.has(user.openId))
      .map((user) => ({
        id: user.sessionId,
        userId: user.userId,
        keyHash: user.keyHash,
        createdAt: user.lastUsed,
        expiresAt: user.expiresAt,
      })),
  )
  for (const user of fresh) {
    if (!created.has(user.openId)) {
      results.push({ openId: user.openId, userId: null, outcome: 'present' })
      continue
    }
    results.push({ openId: user.openId, userId: user.userId, outcome: 'import' })
    if (events.enabled) {
      // The app's features learn of an imported user as of a registered one.
      const who = { userId: user.userId, openId: user.openId }
      await events.emit(trx, who, { type: 'user.created' }, now)
      await events.emit(
        trx,
        who,
        {
          type: 'session.started',
          data: { sessionId: user.sessionId, expiresAt: new Date(user.expiresAt).toISOString() },
        },
        now,
      )
    }
  }

  for (const plan of plans) {
    if (plan.decision === 'import') continue
    if (plan.decision === 'present' || plan.existing === null) {
      results.push({
        openId: plan.user.openId,
        userId: plan.existing?.id ?? null,
        outcome: 'present',
      })
      continue
    }
    const userId = plan.existing.id
    // Decided again under the user's lock: a request may have changed the user since the plan.
    const again = (await lockUser(trx, userId))
      ? (await planOriginalImport(trx, [plan.user], now))[0]
      : undefined
    if (again?.existing?.id !== userId || again.decision === 'present') {
      results.push({ openId: plan.user.openId, userId, outcome: 'present' })
      continue
    }
    if (again.decision === 'extend' && again.session !== null) {
      await touchSession(trx, again.session.id, plan.user.expiresAt, now)
    } else {
      // The original's newer key rotates the imported one, exactly as a registration would.
      await registerUser(
        trx,
        {
          id: plan.user.userId,
          openId: plan.user.openId,
          unionId: null,
          messengerSessionKey: plan.user.messengerSessionKey,
        },
        { id: plan.user.sessionId, keyHash: plan.user.keyHash, expiresAt: plan.user.expiresAt },
        now,
        events,
      )
    }
    results.push({ openId: plan.user.openId, userId, outcome: again.decision })
  }
  return results
}
