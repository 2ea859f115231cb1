/**
 * Every failure the kit reports. `status` is the HTTP status campusgate answered and `code` its
 * `{ error }` code (`@unauthorized/invalid-session-key`, ...). When no answer came at all, `status`
 * is 0 and `code` is one of the kit's own: `@platform/login-failed`, `@platform/request-failed`.
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
export const LOGIN_FAILED = '@platform/login-failed'
/** The platform's `request` failed: no network, DNS, TLS, timeout, domain not allowed. */
export const REQUEST_FAILED = '@platform/request-failed'
/** The platform's storage refused the session key; the kit keeps it in memory instead. */
export const STORAGE_FAILED = '@client/storage-failed'
