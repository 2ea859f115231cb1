import type { Kysely } from 'kysely'
import { SYSTEM, type Audit, type AuditEvent, type Origin } from '../audit/audit.js'
import type { Clock } from '../clock.js'
import type { RunTransaction } from '../db/grouped-commits.js'
import type { Database, Queryable } from '../db/schema.js'
import { inTransaction } from '../db/transaction.js'
import type { Events } from '../events/emitter.js'
import { importOriginalUsers, type ImportResult } from './import.js'
import type { OriginalUser } from './import-plan.js'
import {
  endSession,
  endSessionsOfUser,
  eraseUser,
  linkUniversityAccount,
  registerUser,
  unlinkUniversityAccount,
  type EndReason,
  type LinkResult,
  type NewSession,
  type NewUser,
  type SessionPolicy,
  type UniversityLinkChange,
} from './lifecycle.js'

/**
 * The unit of work for an account change: each call opens one transaction, makes the change
 * (`lifecycle.ts`), writes its audit event and its lifecycle events in it, and after the commit
 * wakes the webhook worker. Nothing else writes these audit events or wakes that worker, so a new
 * caller (a route, a command, the console) cannot forget either.
 *
 * `origin` says who asked: an API request, `cli:<user>`, an operator of the console by name, or
 * `system` (expiry, lapse).
 */
export interface AccountChanges {
  /**
   * Tier 1: a new user (`registration`) or a returning one on a new device (`rotation`: a new key,
   * which past SESSIONS_PER_USER also ends the least recently used one).
   */
  register(change: {
    user: NewUser
    session: NewSession
    origin: Origin
    /** When it happens; the session's expiry was derived from it. */
    now: number
  }): Promise<{ userId: string; created: boolean }>
  /**
   * Logout, an operator's revocation, or expiry of one session: false when something else ended
   * it first (nothing written). The trail has no `revoked`: an operator's revocation is a
   * `logout` by that operator.
   */
  endSession(change: { sessionId: string; reason: EndReason; origin: Origin }): Promise<boolean>
  /** Ends the user's sessions `which` names, or all of them; how many this ended. */
  endSessions(change: {
    userId: string
    which: readonly string[] | 'all'
    reason: EndReason
    origin: Origin
  }): Promise<number>
  /** Erases the user and discards the copies of its mails; false when there is no such user. */
  erase(change: { userId: string; openId: string; origin: Origin }): Promise<boolean>
  /** Tier 2's last step (the callback), audited as `university-linked` when it links. */
  link(change: { link: UniversityLinkChange; origin: Origin; now: number }): Promise<LinkResult>
  /** An operator removes the user's university link; the session stays, at tier 1. */
  unlink(change: { userId: string; origin: Origin }): Promise<boolean>
  /** UNIVERSITY_LINK_MAX_AGE: the user's link made at or before `linkedBefore` lapses. */
  lapse(change: { userId: string; linkedBefore: number; now: number }): Promise<boolean>
  /** `campusgate import-original`: one batch of the original's users, in one transaction. */
  importOriginal(change: {
    users: readonly OriginalUser[]
    origin: Origin
    now: number
  }): Promise<ImportResult[]>
}

export interface AccountChangesOptions {
  db: Kysely<Database>
  clock: Clock
  audit: Audit
  /** Where the lifecycle events go (webhooks); `NO_EVENTS` when WEBHOOK_URL is unset. */
  events: Events
  /** Wakes the webhook worker after a commit that wrote events (a command line has none). */
  wake: () => void
  /** Deletes what the mail transport kept of erased mails (the .eml files). */
  discardMail: (mailIds: readonly string[]) => Promise<void>
  /** Where registrations run: `Db.groupedTransaction` (on SQLite, one commit per turn). */
  registrations: RunTransaction
  /** The sessions' store, their cap per user and the rule of which are live. */
  sessions: SessionPolicy
}

export function createAccountChanges(options: AccountChangesOptions): AccountChanges {
  const { db, clock, audit, events, sessions, registrations } = options

  /** Runs `work` in `run`'s transaction, then wakes the webhook worker once it has committed. */
  async function change<T>(
    work: (trx: Queryable) => Promise<T>,
    run: RunTransaction = (w) => inTransaction(db, w),
  ): Promise<T> {
    const result = await run(work)
    if (events.enabled) options.wake()
    return result
  }

  const record = (trx: Queryable, event: AuditEvent) => audit.record(trx, event)

  /** One trail event per session ended, naming it. */
  async function recordEnded(
    trx: Queryable,
    ended: { reason: EndReason; origin: Origin; userId: string; sessionIds: readonly string[] },
  ): Promise<void> {
    for (const sessionId of ended.sessionIds) {
      await record(trx, {
        type: ended.reason === 'expiry' ? 'expiry' : 'logout',
        origin: ended.origin,
        userId: ended.userId,
        detail: { session: sessionId },
      })
    }
  }

  return {
    register: ({ user, session, origin, now }) =>
      change(async (trx) => {
        const registered = await registerUser(trx, { user, session, sessions, now, events })
        await record(trx, {
          type: registered.created ? 'registration' : 'rotation',
          origin,
          userId: registered.userId,
          openId: user.openId,
        })
        return registered
      }, registrations),

    endSession: ({ sessionId, reason, origin }) =>
      change(async (trx) => {
        const now = clock.now().getTime()
        const ended = await endSession(trx, { sessionId, reason, sessions, now, events })
        if (ended === null) return false
        await recordEnded(trx, { reason, origin, userId: ended.userId, sessionIds: [sessionId] })
        return true
      }),

    endSessions: ({ userId, which, reason, origin }) =>
      change(async (trx) => {
        const now = clock.now().getTime()
        const ended = await endSessionsOfUser(trx, {
          userId,
          which,
          reason,
          sessions,
          now,
          events,
        })
        if (ended === null) return 0
        await recordEnded(trx, { reason, origin, userId, sessionIds: ended.ended })
        return ended.ended.length
      }),

    async erase({ userId, openId, origin }) {
      const mailIds = await change(async (trx) => {
        const ids = await eraseUser(trx, { userId, sessions, now: clock.now().getTime(), events })
        // The trail keeps who was erased (ids only, no profile) until AUDIT_RETENTION.
        if (ids !== null) await record(trx, { type: 'erasure', origin, userId, openId })
        return ids
      })
      if (mailIds === null) return false
      await options.discardMail(mailIds)
      return true
    },

    link: ({ link, origin, now }) =>
      change(async (trx) => {
        const linked = await linkUniversityAccount(trx, { link, now, events })
        if (linked.result === 'linked') {
          await record(trx, { type: 'university-linked', origin, userId: link.userId })
        }
        return linked
      }),

    unlink: ({ userId, origin }) =>
      change(async (trx) => {
        const now = clock.now().getTime()
        const reason = 'revoked'
        if (
          !(await unlinkUniversityAccount(trx, { userId, linkedBefore: now, reason, now, events }))
        )
          return false
        await record(trx, { type: 'university-unlinked', origin, userId, detail: { reason } })
        return true
      }),

    lapse: ({ userId, linkedBefore, now }) =>
      change(async (trx) => {
        const reason = 'lapsed'
        if (!(await unlinkUniversityAccount(trx, { userId, linkedBefore, reason, now, events })))
          return false
        await record(trx, {
          type: 'university-unlinked',
          origin: SYSTEM,
          userId,
          detail: { reason },
        })
        return true
      }),

    importOriginal: ({ users, origin, now }) =>
      change(async (trx) => {
        const results = await importOriginalUsers(trx, { users, sessions, now, events })
        // The trail names who brought each user over (the operator's CLI) and how.
        await audit.recordAll(
          trx,
          results
            .filter((result) => result.outcome !== 'present')
            .map((result) => ({
              type: 'import' as const,
              origin,
              userId: result.userId,
              openId: result.openId,
              detail: { from: 'original', outcome: result.outcome },
            })),
        )
        return results
      }),
  }
}
