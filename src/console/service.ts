import type { Clock } from '../clock.js'
import type { Audit, Origin } from '../audit/audit.js'
import type { Database, OperatorRole } from '../db/schema.js'
import { inTransaction } from '../db/transaction.js'
import { generateSecret, hashSecret, MAX_SECRET_LENGTH, newId } from '../lib/secrets.js'
import type { Kysely } from 'kysely'
import {
  deleteConsoleSession,
  deleteConsoleSessionsOf,
  deleteStaleConsoleRows,
  findConsoleSession,
  findUnusedSignInToken,
  insertConsoleSession,
  insertSignInToken,
  spendSignInToken,
  touchConsoleSession,
} from './store.js'

/** docs/console.md: a link is good for 10 minutes, a session 8 hours and 30 idle. */
export const LINK_TTL_MS = 10 * 60_000
export const SESSION_MAX_MS = 8 * 3_600_000
export const SESSION_IDLE_MS = 30 * 60_000
/** `last_seen_at` is written at most once a minute: an operator clicking around costs no writes. */
const TOUCH_INTERVAL_MS = 60_000

/** The longest operator name a link may carry (it is shown and audited). */
export const MAX_OPERATOR_NAME = 64

export type { OperatorRole }

export interface ConsoleSession {
  id: string
  operator: string
  /** `admin` acts; `viewer` sees every page and does nothing (docs/console.md, "Roles"). */
  role: OperatorRole
  /** When the session ends at the latest (8 hours after sign-in). */
  endsAt: number
}

/** Who an operator's actions are recorded as in the audit trail. */
export function operatorOrigin(operator: string, ip: string | null): Origin {
  return { actor: `console:${operator}`, ip }
}

export interface ConsoleSessions {
  /** `campusgate console link`: a fresh single-use token for `operator`, and when it expires. */
  createLink(
    operator: string,
    role: OperatorRole,
    origin: Origin,
  ): Promise<{ token: string; expiresAt: number }>
  /**
   * Whom an unused link signs in as, without spending it (the sign-in page shows it before the
   * operator presses the button); null when it is unknown, used or expired.
   */
  describeLink(
    token: string,
  ): Promise<{ operator: string; role: OperatorRole; expiresAt: number } | null>
  /**
   * Spends a link's token for a new session; null when it is unknown, used or expired. `replacing`
   * is the session this browser held until now: it ends (signed out) with the new one's start.
   */
  signIn(
    token: string,
    ip: string,
    replacing?: ConsoleSession | null,
  ): Promise<{ cookie: string; session: ConsoleSession } | null>
  /**
   * A session for an operator the university vouched for (CONSOLE_OPERATORS), named by `operator`
   * (the university subject); `refused` records a university sign-in that named no operator.
   */
  signInWithUniversity(
    operator: string,
    role: OperatorRole,
    ip: string,
  ): Promise<{ cookie: string; session: ConsoleSession }>
  refuseUniversity(ip: string, reason: string): Promise<void>
  /** The session of a cookie value, touched; null when unknown, past 8 hours or idle 30 minutes. */
  validate(cookie: string): Promise<ConsoleSession | null>
  signOut(session: ConsoleSession, ip: string): Promise<void>
  /** `campusgate console revoke`: ends one operator's sessions (null: all); how many. */
  revoke(operator: string | null, origin: Origin): Promise<number>
  /** Records an action refused to the operator's role (a viewer's forged request). */
  refuseAction(session: ConsoleSession, ip: string, action: string): Promise<void>
  /** Records what an operator did through the console that no service call records itself. */
  recordAction(
    session: ConsoleSession,
    ip: string,
    detail: Record<string, string | number>,
  ): Promise<void>
}

export function createConsoleSessions(options: {
  db: Kysely<Database>
  clock: Clock
  audit: Audit
}): ConsoleSessions {
  const { db, clock, audit } = options
  const now = (): number => clock.now().getTime()

  return {
    async createLink(operator, role, origin) {
      const token = generateSecret()
      const at = now()
      const expiresAt = at + LINK_TTL_MS
      await inTransaction(db, async (trx) => {
        await insertSignInToken(trx, {
          id: newId(),
          tokenHash: hashSecret(token),
          operator,
          role,
          now: at,
          expiresAt,
        })
        // Links and sessions that can open nothing any more go as new ones are made.
        await deleteStaleConsoleRows(trx, at, at - SESSION_IDLE_MS)
        await audit.record(trx, {
          type: 'console-action',
          origin,
          detail: { action: 'link', operator, role },
        })
      })
      return { token, expiresAt }
    },

    async describeLink(token) {
      if (token.length === 0 || token.length > MAX_SECRET_LENGTH) return null
      return findUnusedSignInToken(db, hashSecret(token), now())
    },

    async signIn(token, ip, replacing = null) {
      const at = now()
      const cookie = generateSecret()
      const id = newId()
      const spent = await inTransaction(db, async (trx) => {
        const link =
          token.length === 0 || token.length > MAX_SECRET_LENGTH
            ? null
            : await spendSignInToken(trx, hashSecret(token), at)
        if (link === null) return null
        // One console session a browser: the one it held ends as it switches (docs/console.md).
        if (replacing !== null && (await deleteConsoleSession(trx, replacing.id))) {
          await audit.record(trx, {
            type: 'console-sign-out',
            origin: operatorOrigin(replacing.operator, ip),
            detail: { reason: 'switched', to: link.operator },
          })
        }
        await insertConsoleSession(trx, {
          id,
          tokenHash: hashSecret(cookie),
          ...link,
          now: at,
        })
        await audit.record(trx, {
          type: 'console-sign-in',
          origin: operatorOrigin(link.operator, ip),
          detail: { method: 'link', role: link.role },
        })
        return link
      })
      if (spent === null) {
        await audit.record(db, {
          type: 'console-sign-in-refused',
          origin: { actor: 'console', ip },
        })
        return null
      }
      return { cookie, session: { id, ...spent, endsAt: at + SESSION_MAX_MS } }
    },

    async signInWithUniversity(operator, role, ip) {
      const at = now()
      const cookie = generateSecret()
      const id = newId()
      await inTransaction(db, async (trx) => {
        await insertConsoleSession(trx, {
          id,
          tokenHash: hashSecret(cookie),
          operator,
          role,
          now: at,
        })
        await audit.record(trx, {
          type: 'console-sign-in',
          origin: operatorOrigin(operator, ip),
          detail: { method: 'university', role },
        })
      })
      return { cookie, session: { id, operator, role, endsAt: at + SESSION_MAX_MS } }
    },

    async refuseUniversity(ip, reason) {
      await audit.record(db, {
        type: 'console-sign-in-refused',
        origin: { actor: 'console', ip },
        detail: { method: 'university', reason },
      })
    },

    async validate(cookie) {
      if (cookie.length === 0 || cookie.length > MAX_SECRET_LENGTH) return null
      const record = await findConsoleSession(db, hashSecret(cookie))
      if (record === null) return null
      const at = now()
      const endsAt = record.createdAt + SESSION_MAX_MS
      if (at >= endsAt || at >= record.lastSeenAt + SESSION_IDLE_MS) {
        await deleteConsoleSession(db, record.id)
        return null
      }
      if (at - record.lastSeenAt >= TOUCH_INTERVAL_MS) await touchConsoleSession(db, record.id, at)
      return { id: record.id, operator: record.operator, role: record.role, endsAt }
    },

    async signOut(session, ip) {
      await inTransaction(db, async (trx) => {
        if (await deleteConsoleSession(trx, session.id)) {
          await audit.record(trx, {
            type: 'console-sign-out',
            origin: operatorOrigin(session.operator, ip),
          })
        }
      })
    },

    async revoke(operator, origin) {
      return inTransaction(db, async (trx) => {
        const ended = await deleteConsoleSessionsOf(trx, operator, now())
        await audit.record(trx, {
          type: 'console-revoked',
          origin,
          detail: { operator: operator ?? '*', sessions: ended },
        })
        return ended
      })
    },

    async refuseAction(session, ip, action) {
      await audit.record(db, {
        type: 'console-action-refused',
        origin: operatorOrigin(session.operator, ip),
        detail: { action, role: session.role, reason: 'operator-role' },
      })
    },

    async recordAction(session, ip, detail) {
      await audit.record(db, {
        type: 'console-action',
        origin: operatorOrigin(session.operator, ip),
        detail,
      })
    },
  }
}
