import type { Kysely } from 'kysely'
import { SYSTEM, type Origin } from '../audit/audit.js'
import type { Clock } from '../clock.js'
import type { Cipher } from '../lib/encryption.js'
import type { SqlReader, SqlRun, SqlWriter } from '../db/database.js'
import type { Database } from '../db/schema.js'
import { isWriteFault } from '../db/failures.js'
import { groupedCommits } from '../db/grouped-commits.js'
import { inTransaction } from '../db/transaction.js'
import { generateSecret, hashSecret, newId } from '../lib/secrets.js'
import type { AccountChanges } from '../accounts/changes.js'
import { usersWithLapsedLinks } from '../accounts/lifecycle.js'
import {
  findExpiredSessionIds,
  findSessionByKeyHash,
  countActiveUsersByDay,
  findSessionOfUser,
  keyChecksTouching,
  raiseExpiryFloors,
  touchSession,
  touchSessionOnNewDay,
  touchSessionOnNewDayWith,
  touchSessionWith,
  type SessionRecord,
} from './store.js'
import { tierOf, type Tier } from './tier.js'
import { absoluteEnd, isLive, reportedExpiry, touchDecision, type TouchRule } from './touch-rule.js'

export type { Tier }

/** What a valid session key stands for; `request.session` in the routes. */
export interface Session {
  readonly id: string
  readonly userId: string
  readonly openId: string
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

export interface MessengerIdentity {
  openId: string
  unionId: string | null
  /** The messenger platform's own session key; stored encrypted. */
  sessionKey: string
}

export interface Sessions {
  /** Registers (or re-registers) a user and returns the new session key: the old one is ended. */
  register(
    identity: MessengerIdentity,
    origin: Origin,
  ): Promise<{ sessionKey: string; expiresAt: Date }>
  /** The session behind a key, extending its validity; `null` if unknown, ended or expired. */
  validate(sessionKey: string): Promise<Session | null>
  /** The user's live session as `GET /session` shows it, neither extended nor ended; `null` if none. */
  sessionOfUser(userId: string): Promise<Session | null>
  /** Users who used their key, per UTC day from `sinceDay` ('YYYY-MM-DD') on (the console's chart). */
  activeUsersByDay(sinceDay: string): Promise<{ day: string; users: number }[]>
  /** Ends a session (found by `validate`); `false` if something else ended it first. */
  logout(sessionId: string, origin: Origin): Promise<boolean>
  /**
   * An operator ends the user's session (the CLI, the console) exactly as logout does, but its
   * events say `revoked`; `false` if the user has no live session.
   */
  revokeUser(userId: string, origin: Origin): Promise<boolean>
  /** Ends up to `limit` expired sessions exactly as logout would; returns how many. */
  endExpired(limit: number): Promise<number>
  /**
   * UNIVERSITY_LINK_MAX_AGE: lapses up to `limit` university links past it (the tier already
   * ignores them), announcing each; returns how many.
   */
  lapseExpiredLinks(limit: number): Promise<number>
  /** Erases the user: the session ends and every row campusgate holds for the user is deleted. */
  eraseUser(user: { userId: string; openId: string }, origin: Origin): Promise<void>
}

/** A touch waiting for its turn's transaction (`writeDueTouches`). */
interface DueTouch {
  record: SessionRecord
  expiresAt: number
  now: number
  firstUseOfDay: boolean
  resolve: () => void
  reject: (error: unknown) => void
}

export interface SessionsOptions {
  db: Kysely<Database>
  /** SQLite's read connection for the key check (`Db.reader`); null reads through `db`. */
  reader?: SqlReader | null
  /** SQLite's synchronous writes (`Db.writer`): touches go there when they can; null: Kysely. */
  writer?: SqlWriter | null
  clock: Clock
  /** Encrypts the messenger session key, which the app's features may need in clear later. */
  cipher: Cipher
  ttlMs: number
  touchIntervalMs: number
  /** SESSION_MAX_AGE: a session ends this long after its registration however it is used; null: never. */
  maxAgeMs?: number | null
  /** UNIVERSITY_LINK_MAX_AGE: an older university link no longer counts; null: links never lapse. */
  linkMaxAgeMs?: number | null
  /** Every change a session makes to an account: registration, logout, expiry, erasure, lapse. */
  changes: AccountChanges
  /**
   * The touches of one event-loop turn commit together (`db/grouped-commits.ts`): for SQLite,
   * whose commit is most of a touch's cost, and in a morning rush every request touches.
   */
  groupTouches?: boolean
}

export function createSessions(options: SessionsOptions): Sessions {
  const { db, clock, cipher, ttlMs, touchIntervalMs, changes } = options
  const linkMaxAgeMs = options.linkMaxAgeMs ?? null
  const maxAgeMs = options.maxAgeMs ?? null
  const rule: TouchRule = { ttlMs, intervalMs: touchIntervalMs, maxAgeMs }
  const reader = options.reader ?? null
  /** PostgreSQL: the key check and its touch in one round trip (store.ts `keyChecksTouching`). */
  const checkKeyTouching =
    reader !== null && reader.roundTrips
      ? keyChecksTouching(db, reader, rule, () => clock.now().getTime())
      : null
  const touches = options.groupTouches === true ? groupedCommits(db) : null

  const writer = options.writer ?? null
  /** The touches of this turn of the event loop, for `writer` (`writeDueTouches`). */
  let due: DueTouch[] = []

  /** Writes a touch, and on the first use of a UTC day the user's mark with it. */
  function writeTouch(
    record: SessionRecord,
    expiresAt: number,
    now: number,
    firstUseOfDay: boolean,
  ): Promise<void> {
    if (writer !== null) {
      return new Promise((resolve, reject) => {
        due.push({ record, expiresAt, now, firstUseOfDay, resolve, reject })
        if (due.length === 1) setImmediate(writeDueTouches)
      })
    }
    return writeThroughKysely({ record, expiresAt, now, firstUseOfDay })
  }

  function writeThroughKysely(touch: Omit<DueTouch, 'resolve' | 'reject'>): Promise<void> {
    const { record, expiresAt, now, firstUseOfDay } = touch
    const write = (trx: Kysely<Database>) =>
      firstUseOfDay
        ? touchSessionOnNewDay(trx, record, expiresAt, now)
        : touchSession(trx, record.id, expiresAt, now)
    if (touches !== null) return touches(write)
    return firstUseOfDay ? inTransaction(db, write) : write(db)
  }

  /**
   * The touches of one turn in one transaction of `writer`'s, settled after its COMMIT, so a touch
   * reported written is written. No savepoint each: a touch's statements can break no constraint
   * (two columns that no key holds, a mark that ignores its duplicate, no foreign key), and what
   * can fail them (a full disk, an I/O error, a lock not had within busy_timeout) fails the whole
   * transaction, as a failed COMMIT fails every touch of a group.
   */
  function writeDueTouches(): void {
    const group = due
    due = []
    const writeAll = (run: SqlRun) => {
      for (const { record, expiresAt, now, firstUseOfDay } of group) {
        if (firstUseOfDay) touchSessionOnNewDayWith(run, db, record, expiresAt, now)
        else touchSessionWith(run, db, record.id, expiresAt, now)
      }
    }
    let written: boolean
    try {
      written = writer!.transaction(writeAll)
    } catch (error) {
      for (const { reject } of group) reject(error)
      return
    }
    // A transaction was open on the writer: Kysely's, whose turn these wait for.
    for (const touch of group) {
      if (written) touch.resolve()
      else writeThroughKysely(touch).then(touch.resolve, touch.reject)
    }
  }

  /** Past its expiry or SESSION_MAX_AGE, however recently used: it ends as by expiry. */
  async function expired(record: SessionRecord): Promise<null> {
    await end(record.id, SYSTEM, 'expiry')
    return null
  }

  function end(
    sessionId: string,
    origin: Origin,
    reason: 'logout' | 'expiry' | 'revoked',
  ): Promise<boolean> {
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
      tier,
      createdAt: new Date(record.createdAt),
      expiresAt: new Date(expiresAt),
      ...(tier === 'university-registered' && linkedAt !== null
        ? { university: universityLinkOf(record.university, linkedAt) }
        : {}),
    }
  }

  return {
    async register(identity, origin) {
      const now = clock.now().getTime()
      const sessionKey = generateSecret()
      const expiresAt = Math.min(now + ttlMs, absoluteEnd(rule, now))
      await changes.register({
        user: {
          id: newId(),
          openId: identity.openId,
          unionId: identity.unionId,
          messengerSessionKey: cipher.encrypt(identity.sessionKey),
        },
        session: { id: newId(), keyHash: hashSecret(sessionKey), expiresAt },
        origin,
        now,
      })
      return { sessionKey, expiresAt: new Date(expiresAt) }
    },

    async validate(sessionKey) {
      // Lookup is by SHA-256 of a 256-bit secret: timing reveals nothing an attacker can steer.
      const keyHash = hashSecret(sessionKey)
      if (checkKeyTouching !== null) {
        const checked = await checkKeyTouching(keyHash)
        if (checked === null) return null
        const { record, now, touchedTo } = checked
        if (!isLive(rule, record, now)) return expired(record)
        return sessionOf(record, now, reportedExpiry(rule, record, touchedTo))
      }
      const record = await findSessionByKeyHash(db, keyHash, reader)
      if (record === null) return null
      const now = clock.now().getTime()
      if (!isLive(rule, record, now)) return expired(record)
      const { due, firstUseOfDay, extended } = touchDecision(rule, record, now)
      let touchedTo: number | null = null
      if (due) {
        try {
          await writeTouch(record, extended, now, firstUseOfDay)
          touchedTo = extended
        } catch (error) {
          // A database that cannot take a write (a full disk) still answers the key check: the
          // session keeps its expiry and is touched on a later request.
          if (!isWriteFault(error)) throw error
        }
      }
      return sessionOf(record, now, reportedExpiry(rule, record, touchedTo))
    },

    activeUsersByDay: (sinceDay) => countActiveUsersByDay(db, sinceDay),

    async sessionOfUser(userId) {
      const record = await findSessionOfUser(db, userId)
      const now = clock.now().getTime()
      if (record === null) return null
      return isLive(rule, record, now)
        ? sessionOf(record, now, reportedExpiry(rule, record, null))
        : null
    },

    logout(sessionId, origin) {
      return end(sessionId, origin, 'logout')
    },

    async revokeUser(userId, origin) {
      const record = await findSessionOfUser(db, userId)
      return record !== null && (await end(record.id, origin, 'revoked'))
    },

    async eraseUser({ userId, openId }, origin) {
      await changes.erase({ userId, openId, origin })
    },

    async lapseExpiredLinks(limit) {
      if (linkMaxAgeMs === null) return 0
      const now = clock.now().getTime()
      const linkedBefore = now - linkMaxAgeMs
      let lapsed = 0
      for (const userId of await usersWithLapsedLinks(db, linkedBefore, limit)) {
        if (await changes.lapse({ userId, linkedBefore, now })) lapsed += 1
      }
      return lapsed
    },

    async endExpired(limit) {
      const now = clock.now().getTime()
      await raiseExpiryFloors(db, now, limit)
      const ids = await findExpiredSessionIds(
        db,
        now,
        maxAgeMs === null ? null : now - maxAgeMs,
        limit,
      )
      let ended = 0
      for (const id of ids) if (await end(id, SYSTEM, 'expiry')) ended += 1
      return ended
    },
  }
}
