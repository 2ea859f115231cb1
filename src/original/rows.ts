/** One row of the original server's `UserSessions` table, as read (CHAR values without trailing spaces). */
export interface OriginalRow {
  /** Space-padded on the left to 64 characters. */
  wechatOpenId: string
  /** The session key the mini-program holds: 64 hex characters, in clear. */
  uclcssaSessionKey: string
  /** Epoch milliseconds, or null when the column held no valid date. */
  lastUsed: number | null
  /** The messenger platform's session key; empty once the original logged the user out. */
  wechatSessionKey: string
  /** The original's tier-2 token; never carried over (no identity was proved). */
  uclapiToken: string
}

/** A row whose user can be imported: the values campusgate stores, still in clear. */
export interface LiveRow {
  kind: 'live'
  openId: string
  sessionKey: string
  messengerSessionKey: string
  lastUsed: number
  expiresAt: number
}

export type RowVerdict =
  | LiveRow
  | { kind: 'expired' }
  | { kind: 'logged-out' }
  /** `name` says which row without a secret: its openId, or its position when it has none. */
  | { kind: 'invalid'; name: string; reason: string }

const SESSION_KEY = /^[0-9A-Fa-f]{64}$/

/**
 * What the import does with one row: `position` is the row's place (from 1) in the order rows
 * are read, `now` and `ttlMs` decide expiry (`LastUsed` + SESSION_TTL).
 */
export function classifyRow(
  row: OriginalRow,
  position: number,
  now: number,
  ttlMs: number,
): RowVerdict {
  const openId = row.wechatOpenId.trim()
  if (openId === '') return { kind: 'invalid', name: `row ${position}`, reason: 'empty openId' }
  const name = `openId ${JSON.stringify(openId)}`
  if (!SESSION_KEY.test(row.uclcssaSessionKey)) {
    return { kind: 'invalid', name, reason: 'session key is not 64 hex characters' }
  }
  if (row.lastUsed === null) return { kind: 'invalid', name, reason: 'LastUsed is not a date' }
  // The original's logout empties the messenger session key and keeps the row: that key is ended.
  if (row.wechatSessionKey.trim() === '') return { kind: 'logged-out' }
  // A LastUsed ahead of this clock (the original's clock, or a wrong --timezone) counts as now.
  const lastUsed = Math.min(row.lastUsed, now)
  const expiresAt = lastUsed + ttlMs
  if (expiresAt <= now) return { kind: 'expired' }
  return {
    kind: 'live',
    openId,
    sessionKey: row.uclcssaSessionKey,
    messengerSessionKey: row.wechatSessionKey.trim(),
    lastUsed,
    expiresAt,
  }
}

/**
 * Parses MySQL's `YYYY-MM-DD HH:MM:SS[.ffffff]` in `timezone` (`local`, `Z` or `±HH:MM`): the
 * original wrote `LastUsed` in its server's local time. Null for anything else (`0000-00-00 …`).
 */
export function parseDatetime(text: string | null, timezone: string): number | null {
  if (text === null) return null
  const match = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$/.exec(text)
  if (match === null) return null
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ]
  const ms = Math.floor(Number(`0.${match[7] ?? '0'}`) * 1000)
  if (year === 0 || month < 1 || month > 12 || day < 1 || day > 31) return null
  if (timezone === 'local') {
    return new Date(year, month - 1, day, hour, minute, second, ms).getTime()
  }
  const offset = timezoneOffsetMs(timezone)
  if (offset === null) return null
  return Date.UTC(year, month - 1, day, hour, minute, second, ms) - offset
}

/** `Z` → 0, `+08:00` → 8 h; null for anything else. */
export function timezoneOffsetMs(timezone: string): number | null {
  if (timezone === 'Z' || timezone === 'UTC') return 0
  const match = /^([+-])(\d{2}):(\d{2})$/.exec(timezone)
  if (match === null) return null
  const hours = Number(match[2])
  const minutes = Number(match[3])
  if (hours > 14 || minutes > 59) return null
  return (match[1] === '-' ? -1 : 1) * (hours * 60 + minutes) * 60_000
}
