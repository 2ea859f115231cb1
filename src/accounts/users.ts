import type { Origin } from '../audit/audit.js'
import type { AccountChanges } from './changes.js'
import type { Queryable } from '../db/schema.js'
import type { MailState } from '../mail/outbox.js'
import type { Outbox } from '../mail/outbox-service.js'
import type { DeviceSession, Sessions, Tier, WhichSessions } from '../sessions/service.js'
import {
  findPersonByOpenId,
  messengerIdentitiesOf,
  universityIdentityOf,
  type MessengerIdentityView,
} from '../identities/store.js'
import { findUser, type Suspension } from '../users/store.js'
import { SUSPENSION_REASON_MAX } from '../events/types.js'

export type { Suspension }
export { SUSPENSION_REASON_MAX }

/** What campusgate holds about one person, for the operator: no secret, no hash. */
export interface UserOverview {
  id: string
  /** The person's first openId and its unionid; `identities` lists every one. */
  openId: string
  unionId: string | null
  /** Every messenger identity, the first first (docs/identities.md). */
  identities: MessengerIdentityView[]
  createdAt: Date
  updatedAt: Date
  /** The operator's suspension, while the person is suspended (docs/console.md, "Suspending a user"). */
  suspension: Suspension | null
  /** When the user last linked a university account, lapsed or not. */
  universityLinkedAt: Date | null
  /** The tier the user's keys have now (the one rule, as `GET /session`); null without a live session. */
  tier: Tier | null
  /** Every live session, most recently used first. */
  sessions: DeviceSession[]
  mails: Record<MailState, number>
}

/** One person, found by any of their openIds, as the operator's commands see and change it. */
export interface Accounts {
  /** How many characters a suspension's reason may have (SUSPENSION_REASON_MAX). */
  readonly reasonMax: number
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
  /**
   * Suspends the person any of whose openIds `openId` is: every session ends, registration is
   * refused until `restore`. `reason` is trimmed; empty is none, longer than SUSPENSION_REASON_MAX
   * characters is refused (nothing changed).
   */
  suspend(action: {
    openId: string
    reason: string | null
    origin: Origin
  }): Promise<{ ended: number } | 'already' | 'reason-too-long' | 'unknown-user'>
  /** Lifts the person's suspension. */
  restore(action: {
    openId: string
    origin: Origin
  }): Promise<'restored' | 'not-suspended' | 'unknown-user'>
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
    reasonMax: SUSPENSION_REASON_MAX,

    async overview(openId) {
      const userId = await findPersonByOpenId(db, openId)
      const user = userId === null ? null : await findUser(db, userId)
      if (user === null) return null
      const identities = await messengerIdentitiesOf(db, user.id)
      const linkedAt = (await universityIdentityOf(db, user.id))?.linkedAt ?? null
      return {
        id: user.id,
        openId: identities[0]?.openId ?? openId,
        unionId: identities[0]?.unionId ?? null,
        identities,
        createdAt: new Date(user.createdAt),
        updatedAt: new Date(user.updatedAt),
        suspension: user.suspension,
        universityLinkedAt: linkedAt === null ? null : new Date(linkedAt),
        ...(await sessions.ofUser(user.id)),
        mails: await outbox.countsOfUser(user.id),
      }
    },

    async revoke({ openId, which, origin }) {
      const userId = await findPersonByOpenId(db, openId)
      if (userId === null) return 'unknown-user'
      return sessions.revoke(userId, which, origin)
    },

    async unlink({ openId, origin }) {
      const userId = await findPersonByOpenId(db, openId)
      if (userId === null) return 'unknown-user'
      return (await changes.unlink({ userId, origin })) ? 'unlinked' : 'not-linked'
    },

    async suspend({ openId, reason, origin }) {
      const given = reason?.trim() ?? ''
      if ([...given].length > SUSPENSION_REASON_MAX) return 'reason-too-long'
      const userId = await findPersonByOpenId(db, openId)
      if (userId === null) return 'unknown-user'
      const done = await changes.suspend({ userId, reason: given === '' ? null : given, origin })
      return done ?? 'unknown-user'
    },

    async restore({ openId, origin }) {
      const userId = await findPersonByOpenId(db, openId)
      if (userId === null) return 'unknown-user'
      return (await changes.restore({ userId, origin })) ?? 'unknown-user'
    },

    async erase({ openId, origin }) {
      const userId = await findPersonByOpenId(db, openId)
      if (userId === null) return false
      return changes.erase({ userId, openId, origin })
    },
  }
}
