import type { Audit, Origin } from '../audit/audit.js'
import type { Clock } from '../clock.js'
import { lockName } from '../db/named-locks.js'
import type { Queryable } from '../db/schema.js'
import { inTransaction } from '../db/transaction.js'
import type { Sessions } from '../sessions/service.js'
import { pageMail } from '../mail/outbox.js'
import {
  findPersonByOpenId,
  messengerIdentitiesOf,
  universityIdentityOf,
} from '../identities/store.js'
import { findUser } from '../users/store.js'
import {
  createHistoryPages,
  decodeCursor,
  encodeCursor,
  iso,
  isoOf,
  NEWEST,
  type AuditItem,
  type EventItem,
  type HistoryPosition,
} from './access-history.js'

/**
 * The right of access (GDPR art. 15, PIPL art. 45; docs/console.md, "Access requests"):
 * everything campusgate holds about one user, in one document. Never a secret: no session key or
 * its hash, no code, cookie or token, no messenger session key, no mail body or link. Where
 * campusgate holds a secret for the user, the document says so without giving it. The audit trail
 * and the events, the parts that grow without end, come a page of about 4 MB at a time.
 */
export interface AccessDocument {
  exportedAt: string
  /** The person; `openId` and `unionId` are their first identity's. */
  user: {
    id: string
    openId: string
    unionId: string | null
    createdAt: string
    updatedAt: string
    /** A messenger platform's session key is held (encrypted); never given out. */
    messengerSessionKeyHeld: boolean
    /** While an operator has suspended the person: since when, and their reason (or null). */
    suspended: { since: string; reason: string | null } | null
  }
  /** Every way a messenger platform knows the person (docs/identities.md), the first first. */
  identities: {
    platform: string
    /** null: from before apps were recorded. */
    appId: string | null
    openId: string
    unionId: string | null
    createdAt: string
    /** This identity's session key is held (encrypted); never given out. */
    sessionKeyHeld: boolean
  }[]
  university: {
    /** The protocol that proved it; null when that was not recorded. */
    protocol: string | null
    subject: string | null
    issuer: string | null
    email: string | null
    name: string | null
    isStudent: boolean | null
    linkedAt: string | null
    /** The provider's token is held (encrypted); never given out. */
    tokenHeld: boolean
  } | null
  /** Live sessions, most recently used first; the device is the registering `User-Agent`. */
  sessions: {
    id: string
    createdAt: string
    lastUsedAt: string
    expiresAt: string
    device: string | null
  }[]
  /** The UTC days the user used a key (the console's active-users chart). */
  activeDays: string[]
  registrationCodes: { createdAt: string; expiresAt: string }[]
  universityAttempts: {
    status: string
    createdAt: string
    expiresAt: string
    finishedAt: string | null
  }[]
  mail: {
    id: string
    to: string
    subject: string
    state: string
    queuedAt: string
    sentAt: string | null
    abandonedAt: string | null
    attempts: number
    lastError: string | null
  }[]
  audit: AuditItem[]
  events: EventItem[]
  /**
   * Null when `audit` and `events` hold the whole history; else they hold its newest part (about
   * 4 MB at most) and the older rest starts at the page asked with `?before=` this cursor.
   */
  next: { before: string } | null
}

export interface AccessRequests {
  /**
   * The document of the user (by id, or by openId for the operator's commands); null when there
   * is no such user. Each export is audited (`data-export`, with who asked).
   */
  export(
    user: { userId: string } | { openId: string },
    origin: Origin,
    page?: { before: string | null },
  ): Promise<AccessDocument | null>
  /** Whether `before` is a cursor a document gave (`next.before`); export takes no other. */
  isCursor(before: string): boolean
}

/** Far more than any user has; the document is never cut off below it. */
const ALL = 1_000_000

export function createAccessRequests(options: {
  db: Queryable
  clock: Clock
  audit: Audit
  sessions: Pick<Sessions, 'listOfUser'>
}): AccessRequests {
  const { db, clock, audit } = options

  async function documentOf(
    userId: string,
    position: HistoryPosition,
  ): Promise<AccessDocument | null> {
    const user = await findUser(db, userId)
    if (user === null) return null
    const identities = await messengerIdentitiesOf(db, userId)
    const first = identities[0]
    const university = await universityIdentityOf(db, userId)
    const openIds = identities.map((identity) => identity.openId)
    const [sessions, days, codes, attempts, mail, history] = await Promise.all([
      options.sessions.listOfUser(userId),
      db
        .selectFrom('user_active_days')
        .select('day')
        .where('user_id', '=', userId)
        .orderBy('day')
        .execute(),
      db
        .selectFrom('registration_codes')
        .select(['created_at', 'expires_at'])
        .where('user_id', '=', userId)
        .orderBy('created_at')
        .execute(),
      db
        .selectFrom('university_attempts')
        .select(['status', 'created_at', 'expires_at', 'finished_at'])
        .where('user_id', '=', userId)
        .orderBy('created_at')
        .execute(),
      pageMail(db, { state: null, userId }, 0, ALL),
      historyPage(userId, openIds, position),
    ])
    return {
      exportedAt: clock.now().toISOString(),
      user: {
        id: user.id,
        openId: first?.openId ?? '',
        unionId: first?.unionId ?? null,
        createdAt: isoOf(user.createdAt),
        updatedAt: isoOf(user.updatedAt),
        messengerSessionKeyHeld: identities.some((identity) => identity.sessionKeyHeld),
        suspended:
          user.suspension === null
            ? null
            : { since: isoOf(user.suspension.at), reason: user.suspension.reason },
      },
      identities: identities.map((identity) => ({
        platform: identity.platform,
        appId: identity.appId,
        openId: identity.openId,
        unionId: identity.unionId,
        createdAt: isoOf(identity.createdAt),
        sessionKeyHeld: identity.sessionKeyHeld,
      })),
      university:
        university !== null && (university.subject !== null || university.email !== null)
          ? {
              protocol: university.protocol,
              subject: university.subject,
              issuer: university.issuer,
              email: university.email,
              name: university.name,
              isStudent: university.isStudent,
              linkedAt: iso(university.linkedAt),
              tokenHeld: university.tokenHeld,
            }
          : null,
      sessions: sessions.map((session) => ({
        id: session.id,
        createdAt: session.createdAt.toISOString(),
        lastUsedAt: session.lastUsedAt.toISOString(),
        expiresAt: session.expiresAt.toISOString(),
        device: session.device,
      })),
      activeDays: days.map((row) => row.day),
      registrationCodes: codes.map((row) => ({
        createdAt: isoOf(row.created_at),
        expiresAt: isoOf(row.expires_at),
      })),
      universityAttempts: attempts.map((row) => ({
        status: row.status,
        createdAt: isoOf(row.created_at),
        expiresAt: isoOf(row.expires_at),
        finishedAt: iso(row.finished_at),
      })),
      mail: mail.rows.reverse().map((row) => ({
        id: row.id,
        to: row.recipient,
        subject: row.subject,
        state: row.state,
        queuedAt: isoOf(row.createdAt),
        sentAt: iso(row.sentAt),
        abandonedAt: iso(row.abandonedAt),
        attempts: row.attempts,
        lastError: row.lastError,
      })),
      audit: history.audit,
      events: history.events,
      next: history.next === null ? null : { before: encodeCursor(history.next) },
    }
  }

  const { historyPage } = createHistoryPages(db)

  /**
   * The person's own exports (`api`) leave one audit row a day at most, whatever they repeat
   * (docs/console.md, "Access requests"); an operator's each leave one, as every action of theirs.
   */
  async function auditExport(userId: string, openId: string, origin: Origin): Promise<void> {
    if (origin.actor !== 'api') {
      await audit.record(db, { type: 'data-export', origin, userId, openId })
      return
    }
    const now = clock.now().getTime()
    const dayStart = now - (now % 86_400_000)
    await inTransaction(db, async (trx) => {
      // Two exports at once: the second waits for the first's row, then finds it.
      await lockName(trx, `data-export\n${userId}`)
      const today = await trx
        .selectFrom('audit_events')
        .select('id')
        .where('user_id', '=', userId)
        .where('type', '=', 'data-export')
        .where('actor', '=', 'api')
        .where('at', '>=', dayStart)
        .limit(1)
        .executeTakeFirst()
      if (today === undefined) {
        await audit.record(trx, { type: 'data-export', origin, userId, openId })
      }
    })
  }

  return {
    async export(which, origin, page) {
      const before = page?.before ?? null
      const position = before === null ? NEWEST : decodeCursor(before)
      if (position === null) throw new TypeError('before: not a cursor a document gave')
      const userId = 'userId' in which ? which.userId : await findPersonByOpenId(db, which.openId)
      if (userId === null) return null
      const document = await documentOf(userId, position)
      if (document === null) return null
      await auditExport(userId, document.user.openId, origin)
      return document
    },
    isCursor: (before) => decodeCursor(before) !== null,
  }
}
