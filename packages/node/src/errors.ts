// What a key check can fail with. The guards answer 503 to the first two and 429 to the third;
// `kind` tells a broken setup from an outage without instanceof across copies of the kit.

/** campusgate could not answer the check: unreachable, too slow, or a 5xx. The guards answer 503. */
export class SessionServiceUnavailableError extends Error {
  readonly kind = 'unavailable'

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'SessionServiceUnavailableError'
  }
}

/**
 * What answers at `baseUrl` is not campusgate's `GET /session`: a 404, a redirect, or a 200 that
 * is not its JSON. Retrying does not help; the address does. The guards still answer 503.
 */
export class CampusgateConfigurationError extends Error {
  readonly kind = 'configuration'

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'CampusgateConfigurationError'
  }
}

/** campusgate refused the check with 429 (the key's own rate limit). The guards answer the same. */
export class RateLimitedError extends Error {
  readonly kind = 'rate-limited'

  constructor(readonly retryAfterSeconds: number) {
    super(`campusgate answered 429; retry after ${retryAfterSeconds} s`)
    this.name = 'RateLimitedError'
  }
}

/** Why a guard answered 503: what `onError` receives. */
export type CheckFailure = SessionServiceUnavailableError | CampusgateConfigurationError

export function isCheckFailure(error: unknown): error is CheckFailure {
  return (
    error instanceof SessionServiceUnavailableError || error instanceof CampusgateConfigurationError
  )
}
