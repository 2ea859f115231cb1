import type { Audit, Origin } from '../audit/audit.js'
import type { Clock } from '../clock.js'
import type { Queryable } from '../db/schema.js'
import type { Sessions } from '../sessions/service.js'
import { endpointOf } from '../events/listing.js'
import { pageMail } from '../mail/outbox.js'
import {
  findPersonByOpenId,
  messengerIdentitiesOf,
  universityIdentityOf,
} from '../identities/store.js'
import { findUser } from '../users/store.js'

/**
 * The right of access (GDPR art. 15, PIPL art. 45; docs/access-requests.md): everything campusgate
 * holds about one user, in one document. Never a secret: no session key or its hash, no code,
 * cookie or token, no messenger session key, no mail body or link. Where campusgate holds a
 * secret for the user, the document says so without giving it.
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
  audit: {
    at: string
    type: string
    actor: string
    /** The address of the user's own requests; an operator's is not the user's data. */
    ip: string | null
    detail: Record<string, unknown> | null
  }[]
  events: {
    id: string
    type: string
    createdAt: string
    data: Record<string, unknown>
    /** Where the event went: each endpoint's origin and path, and how its delivery stands. */
    deliveries: { endpoint: string; state: string; finishedAt: string | null }[]
  }[]
}

export interface AccessRequests {
  /**
   * The document of the user (by id, or by openId for the operator's commands); null when there
   * is no such user. Each export is audited (`data-export`, with who asked).
   */
  export(
    user: { userId: string } | { openId: string },
    origin: Origin,
  ): Promise<AccessDocument | null>
}

/** Far more than any user has; the document is never cut off below it. */
const ALL = 1_000_000

const iso = (ms: number | string | null): string | null =>
  ms === null ? null : new Date(Number(ms)).toISOString()
const isoOf = (ms: number | string): string => new Date(Number(ms)).toISOString()

function parsed(json: string | null): Record<string, unknown> | null {
  if (json === null) return null
  try {
    const value: unknown = JSON.parse(json)
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : null
  } catch {
    return null
  }
}

export function createAccessRequests(options: {
  db: Queryable
  clock: Clock
  audit: Audit
  sessions: Pick<Sessions, 'listOfUser'>
}): AccessRequests {
  const { db, clock, audit } = options

  async function documentOf(userId: string): Promise<AccessDocument | null> {
    const user = await findUser(db, userId)
    if (user === null) return null
    const identities = await messengerIdentitiesOf(db, userId)
    const first = identities[0]
    const university = await universityIdentityOf(db, userId)
    const openIds = identities.map((identity) => identity.openId)
    const [sessions, days, codes, attempts, mail, trail, events, deliveries] = await Promise.all([
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
      db
        .selectFrom('audit_events')
        .select(['at', 'type', 'actor', 'ip', 'detail'])
        .where((eb) =>
          eb.or([
            eb('user_id', '=', userId),
            ...(openIds.length === 0 ? [] : [eb('open_id', 'in', openIds)]),
          ]),
        )
        .orderBy('at')
        .orderBy('id')
        .execute(),
      db
        .selectFrom('webhook_events')
        .select(['id', 'type', 'created_at', 'body'])
        .where('user_id', '=', userId)
        .orderBy('seq')
        .execute(),
      db
        .selectFrom('webhook_deliveries')
        .select(['event_id', 'endpoint', 'state', 'finished_at'])
        .where('user_id', '=', userId)
        .execute(),
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
      audit: trail.map((row) => ({
        at: isoOf(row.at),
        type: row.type,
        actor: row.actor,
        ip: row.actor === 'api' ? row.ip : null,
        detail: parsed(row.detail),
      })),
      events: events.map((event) => ({
        id: event.id,
        type: event.type,
        createdAt: isoOf(event.created_at),
        data: (parsed(event.body)?.data as Record<string, unknown> | undefined) ?? {},
        deliveries: deliveries
          .filter((delivery) => delivery.event_id === event.id)
          .map((delivery) => ({
            endpoint: endpointOf(delivery.endpoint).label,
            state: delivery.state,
            finishedAt: iso(delivery.finished_at),
          })),
      })),
    }
  }

  return {
    async export(which, origin) {
      const userId = 'userId' in which ? which.userId : await findPersonByOpenId(db, which.openId)
      if (userId === null) return null
      const document = await documentOf(userId)
      if (document === null) return null
      await audit.record(db, {
        type: 'data-export',
        origin,
        userId,
        openId: document.user.openId,
      })
      return document
    },
  }
}
