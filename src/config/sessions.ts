import type { SessionsConfig } from './types.js'
import type { Env, Problems } from './problems.js'
import { optionalDuration, withDefaults } from './readers.js'

/** A bound, so a typo cannot make a user's sessions unbounded. */
export const MAX_SESSIONS_PER_USER = 100

/** SESSION_TTL, SESSION_TOUCH_INTERVAL, SESSION_MAX_AGE, SESSIONS_PER_USER, REGISTRATION_CODE_TTL. */
export function readSessions(env: Env, problems: Problems): SessionsConfig {
  const { guard } = problems
  const setting = withDefaults(env, problems)
  const ttlMs = setting.duration('SESSION_TTL', '30d', '3650d')
  return Object.freeze({
    ttlMs,
    // docs/sessions.md, "Validity": the write-back interval never exceeds a tenth of the TTL.
    touchIntervalMs: Math.min(
      setting.duration('SESSION_TOUCH_INTERVAL', '60s', '1d'),
      Math.floor(ttlMs / 10),
    ),
    maxAgeMs: guard(null, () => optionalDuration(env, 'SESSION_MAX_AGE', '3650d')),
    // docs/sessions.md, "Devices": one session per device; 1 is the original server's rule.
    perUser: setting.integer('SESSIONS_PER_USER', 5, 1, MAX_SESSIONS_PER_USER),
    registrationCodeTtlMs: setting.duration('REGISTRATION_CODE_TTL', '30m', '7d'),
  })
}
