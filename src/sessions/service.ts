import type { Kysely } from 'kysely'
import { SYSTEM, type Origin } from '../audit/audit.js'
import type { Clock } from '../clock.js'
import type { Cipher } from '../lib/encryption.js'
import type { Database } from '../db/schema.js'
import { generateSecret, hashSecret, newId } from '../lib/secrets.js'
import { UserSuspended, type AccountChanges, type EndReason } from '../accounts/changes.js'
import { AppError } from '../errors.js'
import {
  countActiveUsersByDay,
  type SessionCounts,
  type SessionRecord,
  type SessionStore,
} from './store.js'
import { tierOf, type Tier } from './tier.js'
import { firstExpiry, isLive, reportedExpiry, type TouchRule } from './touch-rule.js'

export type { Tier }

/** What a valid session key stands for; `request.session` in the routes. */
export interface Session {
  /** The session's id: `sessionId` of GET /session, `id` of GET /sessions, the events' `sessionId`. */
  readonly id: string
  /** The person: the same for every identity and app they register from (docs/identities.md). */
  readonly userId: string
  /** The identity the key was registered with: its openId, app and platform. */
  readonly openId: string
  /** null: a key from before apps were recorded, whose identity no app has claimed since. */
  readonly appId: string | null
  readonly platform: string
  readonly tier: Tier
  /** When the session was registered. */
  readonly createdAt: Date
  readonly expiresAt: Date
  /** At tier 2: the university account that proved it; fields the provider did not give are absent. */
  readonly university?: UniversityLink
}

export interface UniversityLink {
  readonly subject?: string
  readonly email?: string
  readonly name?: string
  readonly isStudent?: boolean
  readonly linkedAt: Date
}

/** The link as `GET /session` shows it: nulls left out, never guessed. */
function universityLinkOf(
  university: SessionRecord['university'],
  linkedAt: number,
): UniversityLink {
  return {
    ...(university.subject === null ? {} : { subject: university.subject }),
    ...(university.email === null ? {} : { email: university.email }),
    ...(university.name === null ? {} : { name: university.name }),
    ...(university.isStudent === null ? {} : { isStudent: university.isStudent }),
    linkedAt: new Date(linkedAt),
  }
}

/** Who logged in, as the messenger platform said (messenger/client.ts). */
export interface MessengerIdentity {
  platform: string
  appId: string
  openId: string
  unionId: string | null
  /** The messenger platform's own session key; stored encrypted. */
  sessionKey: string
}

/** One of a user's live sessions, as `GET /sessions`, the console and the command line show it. */
export interface DeviceSession {
  readonly id: string
  readonly createdAt: Date
  /** The last use, at the touch's precision (SESSION_TOUCH_INTERVAL). */
  readonly lastUsedAt: Date
  readonly expiresAt: Date
  /** The registering request's `User-Agent`; null when it sent none. */
  readonly device: string | null
}

/** Which of a user's sessions an operator or the user ends. */
export type WhichSessions = { sessionId: string } | 'all'

/** A device label keeps at most this many characters of the `User-Agent` (docs/sessions.md). */
export const DEVICE_LABEL_MAX = 256

export interface Sessions {
  /**
   * Registers a user (new or returning) and returns the key of a new session; past
   * SESSIONS_PER_USER the user's least recently used session ends. `device`: the request's
   * `User-Agent`, kept as the session's label (at most DEVICE_LABEL_MAX characters).
   */
  register(
    identity: MessengerIdentity,
    origin: Origin,
    device?: string | null,
  ): Promise<{ sessionKey: string; expiresAt: Date }>
  /** The session behind a key, extending its validity; `null` if unknown, ended or expired. */
  validate(sessionKey: string): Promise<Session | null>
  /** The user's live sessions, most recently used first. */
  listOfUser(userId: string): Promise<DeviceSession[]>
  /** The user's live sessions and the tier their keys have now (null without one), for operators. */
  ofUser(userId: string): Promise<{ tier: Tier | null; sessions: DeviceSession[] }>
  /** Users who used their key, per UTC day from `sinceDay` ('YYYY-MM-DD') on (the console's chart). */
  activeUsersByDay(sinceDay: string): Promise<{ day: string; users: number }[]>
  /** Ends a session (found by `validate`); `false` if something else ended it first. */
  logout(sessionId: string, origin: Origin): Promise<boolean>
  /**
   * The user ends one of their own live sessions (`{ sessionId }`: DELETE /sessions/{id}) or every
   * one (`'all'`: POST /logout?scope=all), as logouts. How many ended: 0 when the id names no
   * live session of the user.
   */
  endOwn(userId: string, which: WhichSessions, origin: Origin): Promise<number>
  /** An operator ends them (the command line, the console): as `endOwn`, with reason `revoked`. */
  revoke(userId: string, which: WhichSessions, origin: Origin): Promise<number>
  /** Ends up to `limit` expired sessions exactly as logout would; returns how many. */
  endExpired(limit: number): Promise<number>
  /**
   * UNIVERSITY_LINK_MAX_AGE: lapses up to `limit` university links past it (the tier already
   * ignores them), announcing each; returns how many.
   */
  lapseExpiredLinks(limit: number): Promise<number>
  /** Erases the user: every session ends and every row campusgate holds for the user is deleted. */
  eraseUser(user: { userId: string; openId: string }, origin: Origin): Promise<void>
  /** Live sessions and the users holding them now (the metrics). */
  counts(): Promise<SessionCounts>
}

export interface SessionsOptions {
  db: Kysely<Database>
  /** The `sessions` table of this database, its key check touching by `rule`. */
  store: SessionStore
  clock: Clock
  /** Encrypts the messenger session key, which the app's features may need in clear later. */
  cipher: Cipher
  rule: TouchRule
  /** UNIVERSITY_LINK_MAX_AGE: an older university link no longer counts; null: links never lapse. */
  linkMaxAgeMs?: number | null
  /** Every change a session makes to an account: registration, logout, expiry, erasure, lapse. */
  changes: AccountChanges
}

/** The `User-Agent` as a device label: at most DEVICE_LABEL_MAX characters, none for an empty one. */
export function deviceLabel(userAgent: string | null | undefined): string | null {
  const label = Array.from((userAgent ?? '').trim())
    .slice(0, DEVICE_LABEL_MAX)
    .join('')
  return label === '' ? null : label
}

export function createSessions(options: SessionsOptions): Sessions {
  const { db, store, clock, cipher, rule, changes } = options
  const linkMaxAgeMs = options.linkMaxAgeMs ?? null

  function end(sessionId: string, origin: Origin, reason: EndReason): Promise<boolean> {
    return changes.endSession({ sessionId, reason, origin })
  }

  /** What a session record stands for at `now`: its tier by the one rule, its link if it counts. */
  function sessionOf(record: SessionRecord, now: number, expiresAt: number): Session {
    const linkedAt = record.university.linkedAt
    const tier = tierOf(linkedAt, now, linkMaxAgeMs)
    return {
      id: record.id,
      userId: record.userId,
      openId: record.openId,
      appId: record.appId,
      platform: record.platform,
      tier,
      createdAt: new Date(record.createdAt),
      expiresAt: new Date(expiresAt),
      ...(tier === 'university-registered' && linkedAt !== null
        ? { university: universityLinkOf(record.university, linkedAt) }
        : {}),
    }
  }

  function deviceSessionOf(record: SessionRecord): DeviceSession {
    return {
      id: record.id,
      createdAt: new Date(record.createdAt),
      lastUsedAt: new Date(record.touchedAt),
      expiresAt: new Date(reportedExpiry(rule, record, null)),
      device: record.device,
    }
  }

  async function liveOfUser(userId: string): Promise<SessionRecord[]> {
    const now = clock.now().getTime()
    return (await store.ofUser(db, userId)).filter((record) => isLive(rule, record, now))
  }

  async function endOfUser(
    userId: string,
    which: WhichSessions,
    origin: Origin,
    reason: 'logout' | 'revoked',
  ): Promise<number> {
    if (which !== 'all') {
      // Only a live session of this user: an id of another user's, or of one already ended or
      // expired, ends nothing.
      const live = await liveOfUser(userId)
      if (!live.some((record) => record.id === which.sessionId)) return 0
    }
    return changes.endSessions({
      userId,
      which: which === 'all' ? 'all' : [which.sessionId],
      reason,
      origin,
    })
  }

  return {
    async register(identity, origin, device = null) {
      const now = clock.now().getTime()
      const sessionKey = generateSecret()
      const expiresAt = firstExpiry(rule, now)
      const registered = changes.register({
        login: {
          userId: newId(),
          identityId: newId(),
          login: {
            platform: identity.platform,
            appId: identity.appId,
            openId: identity.openId,
            unionId: identity.unionId,
            encryptedSessionKey: cipher.encrypt(identity.sessionKey),
          },
        },
        session: {
          id: newId(),
          keyHash: hashSecret(sessionKey),
          expiresAt,
          device: deviceLabel(device),
        },
        origin,
        now,
      })
      // A suspended person registers from none of their identities (docs/sessions.md, "Suspended
      // people"); nothing the attempt wrote is kept.
      await registered.catch((error: unknown) => {
        throw error instanceof UserSuspended
          ? new AppError('userSuspended', { cause: error })
          : error
      })
      return { sessionKey, expiresAt: new Date(expiresAt) }
    },

    async validate(sessionKey) {
      // Lookup is by SHA-256 of a 256-bit secret: timing reveals nothing an attacker can steer.
      const checked = await store.check(hashSecret(sessionKey))
      if (checked === null) return null
      const { record, now, live, touchedTo } = checked
      if (!live) {
        // Past its expiry or SESSION_MAX_AGE, however recently used: it ends as by expiry.
        await end(record.id, SYSTEM, 'expiry')
        return null
      }
      return sessionOf(record, now, reportedExpiry(rule, record, touchedTo))
    },

    async listOfUser(userId) {
      return (await liveOfUser(userId)).map(deviceSessionOf)
    },

    async ofUser(userId) {
      const live = await liveOfUser(userId)
      const tier =
        live[0] === undefined
          ? null
          : tierOf(live[0].university.linkedAt, clock.now().getTime(), linkMaxAgeMs)
      return { tier, sessions: live.map(deviceSessionOf) }
    },

    activeUsersByDay: (sinceDay) => countActiveUsersByDay(db, sinceDay),

    logout(sessionId, origin) {
      return end(sessionId, origin, 'logout')
    },

    endOwn: (userId, which, origin) => endOfUser(userId, which, origin, 'logout'),

    revoke: (userId, which, origin) => endOfUser(userId, which, origin, 'revoked'),

    async eraseUser({ userId, openId }, origin) {
      await changes.erase({ userId, openId, origin })
    },

    async lapseExpiredLinks(limit) {
      if (linkMaxAgeMs === null) return 0
      const now = clock.now().getTime()
      return changes.lapseLinks({ linkedBefore: now - linkMaxAgeMs, now, limit })
    },

    async endExpired(limit) {
      const now = clock.now().getTime()
      const createdBefore = rule.maxAgeMs === null ? null : now - rule.maxAgeMs
      let ended = 0
      for (const id of await store.findExpired(now, createdBefore, limit)) {
        if (await end(id, SYSTEM, 'expiry')) ended += 1
      }
      return ended
    },

    counts: () => store.liveCounts(),
  }
}
