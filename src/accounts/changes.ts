import type { Kysely } from 'kysely'
import { SYSTEM, type Audit, type AuditEvent, type Origin } from '../audit/audit.js'
import type { Clock } from '../clock.js'
import type { RunTransaction } from '../db/grouped-commits.js'
import type { Database, Queryable } from '../db/schema.js'
import { inTransaction } from '../db/transaction.js'
import type { Events } from '../events/emitter.js'
import type { MailLimits } from '../mail/caps.js'
import type { Mail } from '../mail/transport.js'
import { findUsersWithLapsedLinks } from '../identities/store.js'
import { importOriginalUsers, type ImportResult } from './import.js'
import type { OriginalUser } from './import-plan.js'
import {
  endSession,
  endSessionsOfUser,
  eraseUser,
  registerUser,
  restorePerson,
  suspendPerson,
  UserSuspended,
  type EndReason,
  type NewLogin,
  type NewSession,
  type Registered,
  type SessionPolicy,
} from './lifecycle.js'
import {
  endAttempt,
  issueRegistrationCode,
  linkUniversityAccount,
  unlinkUniversityAccount,
  type AttemptEnd,
  type LinkResult,
  type NewCode,
  type UniversityLinkChange,
} from './university.js'

export { UserSuspended }
export type {
  AttemptEnd,
  EndReason,
  LinkResult,
  NewCode,
  NewLogin,
  NewSession,
  Registered,
  SessionPolicy,
  UniversityLinkChange,
}

/**
 * The unit of work for an account change: each call opens one transaction, makes the change
 * (the steps of `lifecycle.ts`, `university.ts`, `import.ts`), writes its audit event and its
 * lifecycle events in it, and after the commit wakes the worker that delivers what it queued (the
 * webhook worker, or the mail worker for a registration code's email). Nothing else writes these
 * audit events or wakes those workers for them, so a new caller (a route, a command, the console)
 * cannot forget either; no other module may import the steps (.dependency-cruiser.cjs).
 *
 * `origin` says who asked: an API request, `cli:<user>`, an operator of the console by name, or
 * `system` (expiry, lapse).
 */
export interface AccountChanges {
  /**
   * Tier 1: a new session of the person the login names (a new person, a returning one, or one a
   * shared unionid joins), audited as `registration`; past SESSIONS_PER_USER it also ends their
   * least recently used session, audited as `rotation` with that session's id. A unionid that
   * would join two existing people is audited as `identity-conflict`.
   */
  register(change: {
    login: NewLogin
    session: NewSession
    origin: Origin
    /** When it happens; the session's expiry was derived from it. */
    now: number
  }): Promise<Registered>
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
  /**
   * An operator suspends the person (docs/console.md, "Suspending a user"): every session ends
   * (`suspended`), `user.suspended` is written, audited as `suspension` with the reason and one
   * `logout` per session ended. How many sessions it ended; `'already'` when the person was
   * suspended already and `null` when there is no such user (nothing written either way).
   */
  suspend(change: {
    userId: string
    reason: string | null
    origin: Origin
  }): Promise<{ ended: number } | 'already' | null>
  /** Lifts the suspension (`user.restored`), audited as `restoration`; nothing when there was none. */
  restore(change: { userId: string; origin: Origin }): Promise<'restored' | 'not-suspended' | null>
  /** Erases the user and discards the copies of its mails; false when there is no such user. */
  erase(change: { userId: string; openId: string; origin: Origin }): Promise<boolean>
  /**
   * Tier 2's first step (POST /register/university): the code and its confirmation email, queued
   * in the same transaction; the mail worker is woken after the commit. Over a mail cap
   * (`limits`) it throws `rateLimitExceeded` and writes nothing.
   */
  issueCode(change: {
    code: NewCode
    mail: Mail
    limits: MailLimits | null
    now: number
  }): Promise<void>
  /**
   * The callback ends the user's attempt without a link, audited as `university-denied` or
   * `university-failed` (with `reason`, the first 200 characters). False when another delivery
   * moved the attempt first (nothing written).
   */
  endAttempt(change: {
    attemptId: string
    userId: string
    from: 'redirected' | 'exchanging'
    to: AttemptEnd
    reason?: string
    origin: Origin
  }): Promise<boolean>
  /**
   * Tier 2's last step (the callback), audited as `university-linked` when it links and as
   * `university-refused` when another user holds the identity (the attempt ends `taken`).
   */
  link(change: { link: UniversityLinkChange; origin: Origin; now: number }): Promise<LinkResult>
  /** An operator removes the user's university link; the session stays, at tier 1. */
  unlink(change: { userId: string; origin: Origin }): Promise<boolean>
  /**
   * UNIVERSITY_LINK_MAX_AGE: up to `limit` links made at or before `linkedBefore` lapse, each in
   * its own transaction. How many lapsed.
   */
  lapseLinks(change: { linkedBefore: number; now: number; limit: number }): Promise<number>
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
  /** Wakes the mail worker after a commit that queued a mail. */
  wakeMail: () => void
  /** Deletes what the mail transport kept of erased mails (the .eml files). */
  discardMail: (mailIds: readonly string[]) => Promise<void>
  /** Where registrations run: `Db.groupedTransaction` (on SQLite, one commit per turn). */
  registrations: RunTransaction
  /** The sessions' store, their cap per user and the rule of which are live. */
  sessions: SessionPolicy
  /** IDENTITY_LINK_BY_UNIONID: a new openId joins the one person whose identity holds its unionid. */
  linkByUnionId: boolean
}

/** Why a link was refused under exclusive binding, in the trail and the log. */
export const TAKEN = 'university account already linked to another account'

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
    register: ({ login, session, origin, now }) =>
      change(async (trx) => {
        const { linkByUnionId } = options
        const registered = await registerUser(trx, {
          login,
          session,
          sessions,
          linkByUnionId,
          now,
          events,
        })
        const { userId } = registered
        const { openId, platform, appId } = login.login
        await record(trx, {
          type: 'registration',
          origin,
          userId,
          openId,
          detail: { person: registered.person, platform, appId, session: session.id },
        })
        for (const evicted of registered.rotated) {
          await record(trx, {
            type: 'rotation',
            origin,
            userId,
            openId,
            detail: { session: evicted, reason: 'SESSIONS_PER_USER reached' },
          })
        }
        if (registered.conflicts.length > 0) {
          // Never merged behind the person's back: both stay, and the trail names them.
          await record(trx, {
            type: 'identity-conflict',
            origin,
            userId,
            openId,
            detail: {
              platform,
              appId,
              otherOpenIds: registered.conflicts.map((other) => other.openId).join(','),
              otherUserIds: registered.conflicts.map((other) => other.userId).join(','),
            },
          })
        }
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

    suspend: ({ userId, reason, origin }) =>
      change(async (trx) => {
        const now = clock.now().getTime()
        const done = await suspendPerson(trx, { userId, reason, sessions, now, events })
        if (done === null || done === 'already') return done
        await recordEnded(trx, { reason: 'suspended', origin, userId, sessionIds: done.ended })
        await record(trx, {
          type: 'suspension',
          origin,
          userId,
          detail: { sessions: done.ended.length, ...(reason === null ? {} : { reason }) },
        })
        return { ended: done.ended.length }
      }),

    restore: ({ userId, origin }) =>
      change(async (trx) => {
        const now = clock.now().getTime()
        const done = await restorePerson(trx, { userId, now, events })
        if (done === 'restored') await record(trx, { type: 'restoration', origin, userId })
        return done
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

    async issueCode({ code, mail, limits, now }) {
      // No audit event and no lifecycle event: the code changes no tier until its link is used.
      await inTransaction(db, (trx) => issueRegistrationCode(trx, { code, mail, now, limits }))
      options.wakeMail()
    },

    endAttempt: ({ attemptId, userId, from, to, reason, origin }) =>
      inTransaction(db, async (trx) => {
        const now = clock.now().getTime()
        if (!(await endAttempt(trx, { attemptId, from, to, now }))) return false
        await record(
          trx,
          to === 'denied'
            ? { type: 'university-denied', origin, userId }
            : {
                type: 'university-failed',
                origin,
                userId,
                detail: { reason: (reason ?? '').slice(0, 200) },
              },
        )
        return true
      }),

    link: ({ link, origin, now }) =>
      change(async (trx) => {
        const linked = await linkUniversityAccount(trx, { link, now, events })
        if (linked.result === 'linked') {
          await record(trx, { type: 'university-linked', origin, userId: link.userId })
        } else if (linked.result === 'taken') {
          await record(trx, {
            type: 'university-refused',
            origin,
            userId: link.userId,
            detail: { reason: TAKEN },
          })
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

    async lapseLinks({ linkedBefore, now, limit }) {
      let lapsed = 0
      for (const userId of await findUsersWithLapsedLinks(db, linkedBefore, limit)) {
        const reason = 'lapsed'
        const went = await change(async (trx) => {
          if (!(await unlinkUniversityAccount(trx, { userId, linkedBefore, reason, now, events })))
            return false
          await record(trx, {
            type: 'university-unlinked',
            origin: SYSTEM,
            userId,
            detail: { reason },
          })
          return true
        })
        if (went) lapsed += 1
      }
      return lapsed
    },

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
