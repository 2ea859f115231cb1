import { CampusgateError } from './error.js'

/** What campusgate answered, as the platform's request hands it over. */
export interface Response<T = unknown> {
  statusCode: number
  data: T
  header: Record<string, string>
}

/**
 * Taro's calls return a promise even when given callbacks, and it rejects when `fail` is called:
 * the callbacks already report it, and left alone it would be an unhandled rejection.
 */
export function handled(returned: unknown): void {
  const then = (returned as { then?: unknown } | null)?.then
  if (typeof then === 'function') then.call(returned, undefined, () => undefined)
}

export function errorCode(response: Response): string | null {
  const data = response.data as { error?: unknown } | null
  return typeof data === 'object' && data !== null && typeof data.error === 'string'
    ? data.error
    : null
}

/** A body of the wire's shape `T`, as wx.request's `data`. */
export function wire<T extends object>(body: T): Record<string, unknown> {
  return body as unknown as Record<string, unknown>
}

export function isSuccess(response: Response): boolean {
  return response.statusCode >= 200 && response.statusCode < 300
}

/** The CampusgateError an answer that is not a 2xx stands for. */
export function failureOf(response: Response): CampusgateError {
  return new CampusgateError(
    response.statusCode,
    errorCode(response) ?? `@http/${response.statusCode}`,
    undefined,
    response.data,
    retryAfterSeconds(response.header) ?? undefined,
  )
}

export function ok(response: Response): Response {
  if (isSuccess(response)) return response
  throw failureOf(response)
}

/** `Retry-After` in seconds (a number or an HTTP date), or null when absent or unreadable. */
export function retryAfterSeconds(header: Record<string, string>): number | null {
  const name = Object.keys(header).find((candidate) => candidate.toLowerCase() === 'retry-after')
  if (name === undefined) return null
  const value = String(header[name]).trim()
  if (/^\d+$/.test(value)) return Number(value)
  const date = Date.parse(value)
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - Date.now()) / 1000))
}
