// docs/sessions.md, "Validity": when a key check writes the session's sliding validity back (a
// touch). The rule is decided here, once, for both databases: each store reads the session, asks
// `touchAt` what is due, and writes exactly that (store-sqlite.ts, store-postgres.ts). The SQL
// only applies the values decided here; test/http/touch-rule.test.ts holds both databases to one
// oracle written from the docs alone.

export interface TouchRule {
  /** SESSION_TTL: how long a touch extends the session from now. */
  ttlMs: number
  /** SESSION_TOUCH_INTERVAL: a session is written back at most this often. */
  intervalMs: number
  /** SESSION_MAX_AGE: a session ends this long after its registration; null: never. */
  maxAgeMs: number | null
}

/** A session's times, as the rule reads them (epoch ms). */
export interface SessionTimes {
  createdAt: number
  expiresAt: number
  /** When the expiry was last written: the last use, at the touch's precision. */
  touchedAt: number
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

/** The expiry a new session registered at `now` gets. */
export function firstExpiry(rule: TouchRule, now: number): number {
  return Math.min(now + rule.ttlMs, absoluteEnd(rule, now))
}

/** Whether the session is still valid at `now`: neither expired nor past SESSION_MAX_AGE. */
export function isLive(
  rule: TouchRule,
  session: Pick<SessionTimes, 'createdAt' | 'expiresAt'>,
  now: number,
): boolean {
  return session.expiresAt > now && absoluteEnd(rule, session.createdAt) > now
}

/**
 * A write-back a key check decided: the store applies it only to a session still written at
 * `readTouchedAt` (a compare-and-set), so of instances racing for one touch one alone writes it.
 */
export interface Touch {
  /** The `touchedAt` the key check read. */
  readTouchedAt: number
  /** The new `touchedAt`: the key check's time. */
  now: number
  /** The new expiry: extended from now, never lowered, never past SESSION_MAX_AGE. */
  expiresAt: number
  /** The first use of a UTC day: the user is marked active on this day ('YYYY-MM-DD'); else null. */
  day: string | null
}

/**
 * Sliding validity, written back at most once per touch interval so reads stay reads, and never
 * past SESSION_MAX_AGE (then there is nothing left to extend). The first use of a UTC day writes
 * whatever the interval: it marks the user active that day. `null`: nothing is due. The session
 * must be live at `now` (`isLive`).
 */
export function touchAt(rule: TouchRule, session: SessionTimes, now: number): Touch | null {
  const extended = Math.min(now + rule.ttlMs, absoluteEnd(rule, session.createdAt))
  const firstUseOfDay = session.touchedAt < utcDayStart(now)
  const due =
    firstUseOfDay || (now - session.touchedAt >= rule.intervalMs && extended > session.expiresAt)
  if (!due) return null
  return {
    readTouchedAt: session.touchedAt,
    now,
    expiresAt: Math.max(session.expiresAt, extended),
    day: firstUseOfDay ? utcDayOf(now) : null,
  }
}

/** The expiry a key check reports: the stored one or the touch's, never past SESSION_MAX_AGE. */
export function reportedExpiry(
  rule: TouchRule,
  session: Pick<SessionTimes, 'createdAt' | 'expiresAt'>,
  touchedTo: number | null,
): number {
  const written = touchedTo === null ? session.expiresAt : Math.max(session.expiresAt, touchedTo)
  return Math.min(written, absoluteEnd(rule, session.createdAt))
}
