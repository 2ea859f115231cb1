/**
 * Every failure the kit reports. `status` is the HTTP status campusgate answered and `code` its
 * `{ error }` code (`@unauthorized/invalid-session-key`, ...). When the failure is the client's
 * side (no answer at all, storage, a wait that ended), `status` is 0 and `code` one of the kit's
 * own `@client/...` codes below.
 */
export class CampusgateError extends Error {
  readonly status: number
  readonly code: string
  /** What campusgate answered, when it answered. */
  readonly data: unknown
  /** How many seconds campusgate asked to wait (its `Retry-After`), when it sent one. */
  readonly retryAfter?: number

  constructor(status: number, code: string, message?: string, data?: unknown, retryAfter?: number) {
    super(message === undefined || message === '' ? `${status} ${code}` : `${code}: ${message}`)
    this.name = 'CampusgateError'
    this.status = status
    this.code = code
    this.data = data
    if (retryAfter !== undefined) this.retryAfter = retryAfter
    // ES2017 output: keep `instanceof` working for a subclass of Error.
    Object.setPrototypeOf(this, CampusgateError.prototype)
  }
}

/** The platform's `login` failed or gave no code. */
export const LOGIN_FAILED = '@client/login-failed'
/** No answer at all: no network, DNS, TLS, timeout, domain not in the request list. */
export const NETWORK_FAILED = '@client/network-failed'
/** @deprecated The earlier name of NETWORK_FAILED. */
export const REQUEST_FAILED = NETWORK_FAILED
/** campusgate answered 2xx without what its interface promises (a wrong `baseUrl`, a proxy). */
export const UNEXPECTED_ANSWER = '@client/unexpected-answer'
/** The platform's storage refused the session key; the kit keeps it in memory instead. */
export const STORAGE_FAILED = '@client/storage-failed'
/** `waitForTier`'s `timeoutMs` passed before the session had the tier. */
export const TIMED_OUT = '@client/timed-out'
/** `waitForTier`'s signal aborted the wait. */
export const ABORTED = '@client/aborted'
/**
 * `request()` was given a URL that is neither a path under `baseUrl` nor under one of the
 * `backends`: nothing was sent, so the session key went nowhere.
 */
export const URL_NOT_ALLOWED = '@client/url-not-allowed'
