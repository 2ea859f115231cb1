import type { Kysely } from 'kysely'
import { SYSTEM, type Audit, type AuditEvent, type Origin } from '../audit/audit.js'
import type { Clock } from '../clock.js'
import { groupedCommits, type RunTransaction } from '../db/grouped-commits.js'
import type { Database, Queryable } from '../db/schema.js'
import { inTransaction } from '../db/transaction.js'
import type { Events } from '../events/emitter.js'
import { importOriginalUsers, type ImportResult } from './import.js'
import type { OriginalUser } from './import-plan.js'
import {
  endSession,
  eraseUser,
  linkUniversityAccount,
  registerUser,
  unlinkUniversityAccount,
  type LinkResult,
  type NewSession,
  type NewUser,
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
  /** Tier 1: a new user (`registration`) or a returning one whose key this rotates (`rotation`). */
  register(change: {
    user: NewUser
    session: NewSession
    origin: Origin
    /** When it happens; the session's expiry was derived from it. */
    now: number
  }): Promise<{ userId: string; created: boolean }>
  /**
   * Logout, an operator's revocation, or expiry: false when something else ended the session
   * first (nothing written). The trail has no `revoked`: an operator's revocation is a `logout`
   * by that operator.
   */
  endSession(change: {
    sessionId: string
    reason: 'logout' | 'expiry' | 'revoked'
    origin: Origin
  }): Promise<boolean>
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
  /**
   * Registrations of one event-loop turn commit together (`db/grouped-commits.ts`): for SQLite,
   * whose commit writes every changed page.
   */
  groupCommits?: boolean
}

export function createAccountChanges(options: AccountChangesOptions): AccountChanges {
  const { db, clock, audit, events } = options
  const registrations: RunTransaction =
    options.groupCommits === true ? groupedCommits(db) : (work) => inTransaction(db, work)

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

  return {
    register: ({ user, session, origin, now }) =>
      change(async (trx) => {
        const registered = await registerUser(trx, { user, session, now, events })
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
        const userId = await endSession(trx, { sessionId, reason, now, events })
        if (userId === null) return false
        await record(trx, { type: reason === 'expiry' ? 'expiry' : 'logout', origin, userId })
        return true
      }),

    async erase({ userId, openId, origin }) {
      const mailIds = await change(async (trx) => {
        const ids = await eraseUser(trx, { userId, now: clock.now().getTime(), events })
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
        const results = await importOriginalUsers(trx, { users, now, events })
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
