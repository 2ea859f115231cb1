import type { BackendsConfig } from './types.js'
import { type Env, fail, type Problems } from './problems.js'
import { integer, list } from './readers.js'

// Far above any sensible limit, far below where a counter loses precision (as rate-limits.ts).
const MAX_RATE_LIMIT = 1_000_000_000

/** Longest id or secret taken: longer ones are no credential anyone types or generates. */
const MAX_CREDENTIAL_LENGTH = 256

/**
 * RFC 3986's unreserved characters. Form encoders differ on `~` (URLSearchParams sends `%7E`), so
 * POST /introspect form-decodes the Basic id and secret as RFC 6749 §2.3.1 says before comparing.
 */
const UNRESERVED = /^[A-Za-z0-9\-_.~]+$/

/**
 * BACKEND_CREDENTIALS and RATE_LIMIT_PER_BACKEND (docs/tier-guard.md, "From another backend"):
 * the app's backends that may ask `POST /introspect` about a key, and how often each may. Messages
 * never repeat a secret.
 */
export function readBackends(env: Env, { guard }: Problems): BackendsConfig {
  return Object.freeze({
    credentials: guard(new Map<string, string>(), () => backendCredentials(env)),
    perBackendMax: guard(60_000, () =>
      integer(env, 'RATE_LIMIT_PER_BACKEND', 60_000, 0, MAX_RATE_LIMIT),
    ),
  })
}

function backendCredentials(env: Env): Map<string, string> {
  const credentials = new Map<string, string>()
  for (const [index, item] of (list(env, 'BACKEND_CREDENTIALS') ?? []).entries()) {
    const colon = item.indexOf(':')
    const id = colon < 0 ? '' : item.slice(0, colon)
    const secret = colon < 0 ? '' : item.slice(colon + 1)
    if (
      ![id, secret].every((part) => UNRESERVED.test(part) && part.length <= MAX_CREDENTIAL_LENGTH)
    ) {
      fail(
        'BACKEND_CREDENTIALS',
        `item ${index + 1} is not id:secret made of letters, digits, -, _, . and ~ ` +
          `(at most ${MAX_CREDENTIAL_LENGTH} each)`,
      )
    }
    if (credentials.has(id)) {
      fail('BACKEND_CREDENTIALS', `names the backend ${JSON.stringify(id)} twice`)
    }
    credentials.set(id, secret)
  }
  return credentials
}
