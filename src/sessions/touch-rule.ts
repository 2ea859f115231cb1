// SPEC "Sessions": when a key check writes the session's sliding validity back (a touch). The
// rule is decided here for SQLite, whose touch follows the read in the same process, and by
// `keyChecksTouching` (store.ts) in SQL for PostgreSQL, whose touch rides in the key check's own
// round trip; test/http/touch-rule.test.ts holds the two to the same answers.

export interface TouchRule {
  /** SESSION_TTL: how long a touch extends the session from now. */
  ttlMs: number
  /** SESSION_TOUCH_INTERVAL: a session is written back at most this often. */
  intervalMs: number
  /** SESSION_MAX_AGE: a session ends this long after its registration; null: never. */
  maxAgeMs: number | null
}

const DAY_MS = 86_400_000

/** The start of `at`'s UTC day (epoch ms). */
export function utcDayStart(at: number): number {
  return Math.floor(at / DAY_MS) * DAY_MS
}

/** The UTC day of `at` as `user_active_days` names it: 'YYYY-MM-DD'. */
export function utcDayOf(at: number): string {
  return new Date(at).toISOString().slice(0, 10)
}

/** The absolute end of a session registered at `createdAt` (SESSION_MAX_AGE). */
export function absoluteEnd(rule: TouchRule, createdAt: number): number {
  return rule.maxAgeMs === null ? Number.POSITIVE_INFINITY : createdAt + rule.maxAgeMs
}

/** Whether the session is still valid at `now`: neither expired nor past SESSION_MAX_AGE. */
export function isLive(
  rule: TouchRule,
  session: { createdAt: number; expiresAt: number },
  now: number,
): boolean {
  return session.expiresAt > now && absoluteEnd(rule, session.createdAt) > now
}

/** What a key check at `now` writes back to a live session, if anything. */
export interface TouchDecision {
  /** Whether the session is written back now. */
  due: boolean
  /** The first use of a UTC day: written whatever the interval, and it marks the user active. */
  firstUseOfDay: boolean
  /** The expiry a touch now gives, never past SESSION_MAX_AGE. */
  extended: number
}

/**
 * Sliding validity, written back at most once per touch interval so reads stay reads, and never
 * past SESSION_MAX_AGE (then there is nothing left to extend). The first use of a UTC day writes
 * whatever the interval: it marks the user active that day.
 */
export function touchDecision(
  rule: TouchRule,
  session: { createdAt: number; expiresAt: number; touchedAt: number },
  now: number,
): TouchDecision {
  const extended = Math.min(now + rule.ttlMs, absoluteEnd(rule, session.createdAt))
  const firstUseOfDay = session.touchedAt < utcDayStart(now)
  const due =
    firstUseOfDay || (now - session.touchedAt >= rule.intervalMs && extended > session.expiresAt)
  return { due, firstUseOfDay, extended }
}

/** The expiry a key check reports: the stored one within SESSION_MAX_AGE, or the touch's. */
export function reportedExpiry(
  rule: TouchRule,
  session: { createdAt: number; expiresAt: number },
  touchedTo: number | null,
): number {
  const stored = Math.min(session.expiresAt, absoluteEnd(rule, session.createdAt))
  return touchedTo === null ? stored : Math.max(stored, touchedTo)
}
