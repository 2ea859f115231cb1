import type { RateLimitConfig } from './types.js'
import type { Env, Problems } from './problems.js'
import { duration, integer } from './readers.js'

// Far above any sensible limit, far below where a counter loses precision.
const MAX_RATE_LIMIT = 1_000_000_000

/** RATE_LIMIT_WINDOW and the four maxima (docs/decisions.md, "Rate limits"; 0 turns one off). */
export function readRateLimits(env: Env, { guard }: Problems): RateLimitConfig {
  return Object.freeze({
    windowMs: guard(60_000, () => duration(env, 'RATE_LIMIT_WINDOW', '1m', '1d')),
    globalMax: guard(1000, () => integer(env, 'RATE_LIMIT_PER_ADDRESS', 1000, 0, MAX_RATE_LIMIT)),
    sensitiveMax: guard(100, () =>
      integer(env, 'RATE_LIMIT_REGISTRATION_PER_ADDRESS', 100, 0, MAX_RATE_LIMIT),
    ),
    perSessionMax: guard(600, () => integer(env, 'RATE_LIMIT_PER_SESSION', 600, 0, MAX_RATE_LIMIT)),
    consoleSignInMax: guard(10, () =>
      integer(env, 'RATE_LIMIT_CONSOLE_SIGN_IN_PER_ADDRESS', 10, 0, MAX_RATE_LIMIT),
    ),
  })
}
