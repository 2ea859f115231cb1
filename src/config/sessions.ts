import type { Config } from './types.js'
import type { Env, Problems } from './problems.js'
import { DAY_MS, duration, optionalDuration } from './readers.js'

/** SESSION_TTL, SESSION_TOUCH_INTERVAL, SESSION_MAX_AGE, REGISTRATION_CODE_TTL. */
export function readSessions(
  env: Env,
  { guard }: Problems,
): Pick<
  Config,
  'sessionTtlMs' | 'sessionTouchIntervalMs' | 'sessionMaxAgeMs' | 'registrationCodeTtlMs'
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
    registrationCodeTtlMs: guard(30 * 60_000, () =>
      duration(env, 'REGISTRATION_CODE_TTL', '30m', '7d'),
    ),
  }
}
