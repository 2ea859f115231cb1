import type { RateLimitConfig } from './types.js'
import type { Env, Problems } from './problems.js'
import { withDefaults } from './readers.js'

// Far above any sensible limit, far below where a counter loses precision.
const MAX_RATE_LIMIT = 1_000_000_000

/** RATE_LIMIT_WINDOW and the four maxima (docs/decisions.md, "Rate limits"; 0 turns one off). */
export function readRateLimits(env: Env, problems: Problems): RateLimitConfig {
  const setting = withDefaults(env, problems)
  return Object.freeze({
    windowMs: setting.duration('RATE_LIMIT_WINDOW', '1m', '1d'),
    globalMax: setting.integer('RATE_LIMIT_PER_ADDRESS', 1000, 0, MAX_RATE_LIMIT),
    sensitiveMax: setting.integer('RATE_LIMIT_REGISTRATION_PER_ADDRESS', 100, 0, MAX_RATE_LIMIT),
    perSessionMax: setting.integer('RATE_LIMIT_PER_SESSION', 600, 0, MAX_RATE_LIMIT),
    consoleSignInMax: setting.integer(
      'RATE_LIMIT_CONSOLE_SIGN_IN_PER_ADDRESS',
      10,
      0,
      MAX_RATE_LIMIT,
    ),
  })
}
