import type { Origin } from '../audit/audit.js'
import type { AccountChanges } from './changes.js'
import type { Queryable } from '../db/schema.js'
import type { MailState } from '../mail/outbox.js'
import type { Outbox } from '../mail/outbox-service.js'
import type { DeviceSession, Sessions, Tier, WhichSessions } from '../sessions/service.js'
import { findUserByOpenId } from '../users/store.js'

/** What campusgate holds about one user, for the operator: no secret, no hash. */
export interface UserOverview {
  id: string
  openId: string
  unionId: string | null
  createdAt: Date
  updatedAt: Date
  /** When the user last linked a university account, lapsed or not. */
  universityLinkedAt: Date | null
  /** The tier the user's keys have now (the one rule, as `GET /session`); null without a live session. */
  tier: Tier | null
  /** Every live session, most recently used first. */
  sessions: DeviceSession[]
  mails: Record<MailState, number>
}

/** One user, found by openId, as the operator's commands see and change it. */
export interface Accounts {
  overview(openId: string): Promise<UserOverview | null>
  /**
   * Ends one of the user's live sessions, or all of them, exactly as POST /logout does (their
   * events say `revoked`): how many ended. `origin` names the operator (`cli:<user>`, or the
   * console's operator), as the trail records it.
   */
  revoke(action: {
    openId: string
    which: WhichSessions
    origin: Origin
  }): Promise<number | 'unknown-user'>
  /** Removes the user's university link: the session stays, at tier 1. */
  unlink(action: {
    openId: string
    origin: Origin
  }): Promise<'unlinked' | 'not-linked' | 'unknown-user'>
  /** Erases the user exactly as DELETE /user does; false when there is no such user. */
  erase(action: { openId: string; origin: Origin }): Promise<boolean>
}

export function createAccounts(options: {
  db: Queryable
  sessions: Sessions
  outbox: Outbox
  changes: AccountChanges
}): Accounts {
  const { db, sessions, outbox, changes } = options
  return {
    async overview(openId) {
      const user = await findUserByOpenId(db, openId)
      if (user === null) return null
      return {
        id: user.id,
        openId: user.open_id,
        unionId: user.union_id,
        createdAt: new Date(user.created_at),
        updatedAt: new Date(user.updated_at),
        universityLinkedAt:
          user.university_linked_at === null ? null : new Date(user.university_linked_at),
        ...(await sessions.ofUser(user.id)),
        mails: await outbox.countsOfUser(user.id),
      }
    },

    async revoke({ openId, which, origin }) {
      const user = await findUserByOpenId(db, openId)
      if (user === null) return 'unknown-user'
      return sessions.revoke(user.id, which, origin)
    },

    async unlink({ openId, origin }) {
      const user = await findUserByOpenId(db, openId)
      if (user === null) return 'unknown-user'
      return (await changes.unlink({ userId: user.id, origin })) ? 'unlinked' : 'not-linked'
    },

    async erase({ openId, origin }) {
      const user = await findUserByOpenId(db, openId)
      if (user === null) return false
      return changes.erase({ userId: user.id, openId, origin })
    },
  }
}
