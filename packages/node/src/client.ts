import { Pool } from 'undici'
import { SessionCache, type CacheOptions } from './cache.js'
import { MEDIA_TYPE } from './answers.js'
import type { Session } from './session.js'

export interface ClientOptions {
  /** campusgate's address, e.g. `http://campusgate.internal:3000` (a path prefix is kept). */
  baseUrl: string
  /** How long a key check may take (connect, then headers, then body) before it fails closed. */
  timeoutMs?: number
  /** Remember checked keys for a while. Off by default, so a logout is seen at once. */
  cache?: CacheOptions
  /** The most connections the pool keeps open to campusgate. */
  connections?: number
}

export interface Client {
  /** GET /session: the session behind `key`, or null for a key campusgate does not know (any more). */
  session(key: string): Promise<Session | null>
  /** Forgets the cached keys of one user (the webhook handler calls it on that user's events). */
  forgetUser(openId: string): void
  /** Closes the connection pool. */
  close(): Promise<void>
}

/** campusgate could not answer the check: unreachable, too slow, or a 5xx. The guards answer 503. */
export class SessionServiceUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'SessionServiceUnavailableError'
  }
}

/** campusgate refused the check with 429 (the key's own rate limit). The guards answer the same. */
export class RateLimitedError extends Error {
  constructor(readonly retryAfterSeconds: number) {
    super(`campusgate answered 429; retry after ${retryAfterSeconds} s`)
    this.name = 'RateLimitedError'
  }
}

export const DEFAULT_TIMEOUT_MS = 2_000
const DEFAULT_CONNECTIONS = 16
/** campusgate refuses longer keys without a lookup; so does the kit. */
const MAX_KEY_LENGTH = 256
/** Printable ASCII: every key campusgate issues, and nothing that could break a header line. */
const PRINTABLE = /^[\x20-\x7e]+$/

export function createClient(options: ClientOptions): Client {
  const base = new URL(options.baseUrl)
  const path = `${base.pathname.replace(/\/+$/, '')}/session`
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
  if (!(timeoutMs > 0)) throw new TypeError('timeoutMs must be > 0')
  // One pool of kept-alive connections: a check is one request on an open connection.
  const pool = new Pool(base.origin, {
    connections: options.connections ?? DEFAULT_CONNECTIONS,
    connect: { timeout: timeoutMs },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  })
  const cache = options.cache === undefined ? null : new SessionCache(options.cache)

  async function ask(key: string): Promise<Session | null> {
    let response: Awaited<ReturnType<Pool['request']>>
    try {
      response = await pool.request({
        path,
        method: 'GET',
        headers: { accept: MEDIA_TYPE, authorization: key },
      })
    } catch (error) {
      throw new SessionServiceUnavailableError('campusgate did not answer the key check', {
        cause: error,
      })
    }
    const { statusCode, headers, body } = response
    try {
      if (statusCode === 200) return (await body.json()) as Session
      await body.dump()
    } catch (error) {
      throw new SessionServiceUnavailableError('the key check answer broke off', { cause: error })
    }
    if (statusCode === 401) return null
    if (statusCode === 429) {
      const retryAfter = Number(headers['retry-after'])
      throw new RateLimitedError(Number.isInteger(retryAfter) && retryAfter >= 0 ? retryAfter : 1)
    }
    throw new SessionServiceUnavailableError(`campusgate answered the key check with ${statusCode}`)
  }

  return {
    async session(key) {
      if (typeof key !== 'string' || key === '' || key.length > MAX_KEY_LENGTH) return null
      if (!PRINTABLE.test(key)) return null
      const cached = cache?.get(key)
      if (cached) return cached
      const session = await ask(key)
      if (session !== null) cache?.set(key, session)
      return session
    },
    forgetUser(openId) {
      cache?.dropUser(openId)
    },
    close: () => pool.close(),
  }
}
