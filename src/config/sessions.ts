import type { Config } from './types.js'
import type { Env, Problems } from './problems.js'
import { DAY_MS, duration, integer, optionalDuration } from './readers.js'

/** A bound, so a typo cannot make a user's sessions unbounded. */
export const MAX_SESSIONS_PER_USER = 100

/** SESSION_TTL, SESSION_TOUCH_INTERVAL, SESSION_MAX_AGE, SESSIONS_PER_USER, REGISTRATION_CODE_TTL. */
export function readSessions(
  env: Env,
  { guard }: Problems,
): Pick<
  Config,
  | 'sessionTtlMs'
  | 'sessionTouchIntervalMs'
  | 'sessionMaxAgeMs'
  | 'sessionsPerUser'
  | 'registrationCodeTtlMs'
> {
  const sessionTtlMs = guard(30 * DAY_MS, () => duration(env, 'SESSION_TTL', '30d', '3650d'))
  return {
    sessionTtlMs,
    // docs/decisions.md, "Sessions": the write-back interval never exceeds a tenth of the TTL.
    sessionTouchIntervalMs: Math.min(
      guard(60_000, () => duration(env, 'SESSION_TOUCH_INTERVAL', '60s', '1d')),
      Math.floor(sessionTtlMs / 10),
    ),
    sessionMaxAgeMs: guard(null, () => optionalDuration(env, 'SESSION_MAX_AGE', '3650d')),
    // docs/sessions.md, "Devices": one session per device; 1 is the original server's rule.
    sessionsPerUser: guard(5, () => integer(env, 'SESSIONS_PER_USER', 5, 1, MAX_SESSIONS_PER_USER)),
    registrationCodeTtlMs: guard(30 * 60_000, () =>
      duration(env, 'REGISTRATION_CODE_TTL', '30m', '7d'),
    ),
  }
}
