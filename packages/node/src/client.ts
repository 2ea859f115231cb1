import { Pool } from 'undici'
import { SessionCache, type CacheOptions } from './cache.js'
import { MEDIA_TYPE } from './answers.js'
import {
  CampusgateConfigurationError,
  RateLimitedError,
  SessionServiceUnavailableError,
  isCheckFailure,
  type CheckFailure,
} from './errors.js'
import { isSession, sessionFromIntrospection, type Session } from './session.js'

export {
  CampusgateConfigurationError,
  RateLimitedError,
  SessionServiceUnavailableError,
  type CheckFailure,
}

export interface ClientOptions {
  /** campusgate's address, e.g. `http://campusgate.internal:3000` (a path prefix is kept). */
  baseUrl: string
  /** How long one key check may take in all (connecting, headers, body) before it fails closed. */
  timeoutMs?: number
  /** Remember checked keys for a while. Off by default, so a logout is seen at once. */
  cache?: CacheOptions
  /**
   * This backend's id and secret in campusgate's BACKEND_CREDENTIALS. Given, keys are checked with
   * `POST /introspect` (RFC 7662): the checks count against this backend's own rate limit, not the
   * user's key's. Without them, with `GET /session`, which spends the key's own budget.
   */
  credentials?: { id: string; secret: string }
  /** The most connections the pool keeps open to campusgate. */
  connections?: number
  /**
   * Receives the cause of every key check that failed (and so of every 503 the guards answer):
   * a `SessionServiceUnavailableError` (campusgate unreachable, too slow, 5xx) or a
   * `CampusgateConfigurationError` (a wrong `baseUrl`). Checks shared by concurrent requests
   * report once. What it throws is ignored: a report never changes an answer.
   */
  onError?: (cause: CheckFailure) => void
}

export interface Client {
  /**
   * The session behind `key` (`POST /introspect` with `credentials`, else `GET /session`), or null
   * for a key campusgate does not know (any more).
   */
  session(key: string): Promise<Session | null>
  /** Forgets the cached keys of one user (the webhook handler calls it on that user's events). */
  forgetUser(openId: string): void
  /** Closes the connection pool. */
  close(): Promise<void>
}

export const DEFAULT_TIMEOUT_MS = 2_000
const DEFAULT_CONNECTIONS = 16
/** campusgate refuses longer keys without a lookup; so does the kit. */
const MAX_KEY_LENGTH = 256
/** Printable ASCII: every key campusgate issues, and nothing that could break a header line. */
const PRINTABLE = /^[\x20-\x7e]+$/
/** The most of an answer read; campusgate's are far smaller. */
const MAX_ANSWER_BYTES = 64 * 1024

export function createClient(options: ClientOptions): Client {
  const base = new URL(options.baseUrl)
  const prefix = base.pathname.replace(/\/+$/, '')
  const introspection = options.credentials === undefined ? null : basicAuth(options.credentials)
  const path = introspection === null ? `${prefix}/session` : `${prefix}/introspect`
  // Named in errors without any user:password the address may carry.
  const where = `${introspection === null ? 'GET' : 'POST'} ${base.origin}${path}`
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS
  if (!(timeoutMs > 0)) throw new TypeError('timeoutMs must be > 0')
  // One pool of kept-alive connections: a check is one request on an open connection. undici's
  // own timeouts each restart per phase (and per body chunk); the signal in ask() bounds the
  // whole check.
  const pool = new Pool(base.origin, {
    connections: options.connections ?? DEFAULT_CONNECTIONS,
    connect: { timeout: timeoutMs },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    // A session is a few hundred bytes; a page the size of a web app is not campusgate.
    maxResponseSize: MAX_ANSWER_BYTES,
  })
  const cache = options.cache === undefined ? null : new SessionCache(options.cache)
  // Checks of one key in flight at once share one GET /session: a page that fires many requests
  // with a fresh key costs campusgate one lookup.
  const inFlight = new Map<string, Promise<Session | null>>()

  async function ask(key: string): Promise<Session | null> {
    const signal = AbortSignal.timeout(timeoutMs)
    let response: Awaited<ReturnType<Pool['request']>>
    try {
      response = await pool.request(
        introspection === null
          ? { path, method: 'GET', headers: { accept: MEDIA_TYPE, authorization: key }, signal }
          : {
              path,
              method: 'POST',
              headers: {
                accept: 'application/json',
                authorization: introspection,
                'content-type': 'application/x-www-form-urlencoded',
              },
              body: new URLSearchParams({ token: key }).toString(),
              signal,
            },
      )
    } catch (error) {
      throw new SessionServiceUnavailableError(`${where} did not answer the key check`, {
        cause: error,
      })
    }
    const { statusCode, headers, body } = response
    let text: string
    try {
      text = await body.text()
    } catch (error) {
      if ((error as { code?: unknown }).code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') {
        throw new CampusgateConfigurationError(
          `${where} answered ${statusCode} with more than ${MAX_ANSWER_BYTES} bytes: ` +
            `is baseUrl campusgate's address?`,
          { cause: error },
        )
      }
      throw new SessionServiceUnavailableError(`${where}: the key check answer broke off`, {
        cause: error,
      })
    }
    if (statusCode === 200) return sessionFrom(headers['content-type'], text)
    if (statusCode === 401 && introspection !== null) {
      throw new CampusgateConfigurationError(
        `${where} refused this backend's credentials (401 invalid_client): ` +
          `are credentials an id:secret of campusgate's BACKEND_CREDENTIALS?`,
      )
    }
    if (statusCode === 401) return null
    if (statusCode === 429) {
      const retryAfter = Number(headers['retry-after'])
      throw new RateLimitedError(Number.isInteger(retryAfter) && retryAfter >= 0 ? retryAfter : 1)
    }
    // campusgate answers a check with 200, 401, 429 or an outage status; a 404 or a redirect comes
    // from something else at that address (or a campusgate without BACKEND_CREDENTIALS), and a
    // 400 from introspection means the kit and campusgate disagree.
    if (statusCode === 404 || statusCode === 400 || (statusCode >= 300 && statusCode < 400)) {
      throw new CampusgateConfigurationError(
        `${where} answered ${statusCode}: is baseUrl campusgate's address` +
          (introspection === null ? '?' : ', and BACKEND_CREDENTIALS set there?'),
      )
    }
    throw new SessionServiceUnavailableError(`${where} answered the key check with ${statusCode}`)
  }

  function sessionFrom(contentType: string | string[] | undefined, text: string): Session | null {
    const mediaType = String(contentType ?? '')
      .split(';')[0]
      .trim()
      .toLowerCase()
    let parsed: unknown = undefined
    try {
      parsed = JSON.parse(text)
    } catch {
      // Left undefined: reported below as what it is.
    }
    if (introspection === null) {
      if (mediaType === MEDIA_TYPE && isSession(parsed)) return parsed
    } else if (mediaType === 'application/json') {
      const introspected = sessionFromIntrospection(parsed)
      if (introspected !== undefined) return introspected
    }
    throw new CampusgateConfigurationError(
      `${where} answered 200 with ${mediaType || 'no media type'}, not a campusgate session: ` +
        `is baseUrl campusgate's address?`,
    )
  }

  let warnedConfiguration = false
  function report(error: unknown): void {
    if (!isCheckFailure(error)) return
    if (options.onError === undefined) {
      // An outage passes; a wrong address does not, and would otherwise be a silent 503 forever.
      if (error instanceof CampusgateConfigurationError && !warnedConfiguration) {
        warnedConfiguration = true
        process.emitWarning(error.message, { code: 'CAMPUSGATE_CONFIGURATION' })
      }
      return
    }
    try {
      options.onError(error)
    } catch {
      // A failing logger must not turn a 503 into something else.
    }
  }

  return {
    async session(key) {
      if (typeof key !== 'string' || key === '' || key.length > MAX_KEY_LENGTH) return null
      if (!PRINTABLE.test(key)) return null
      const cached = cache?.get(key)
      if (cached) return cached
      let pending = inFlight.get(key)
      if (pending === undefined) {
        pending = ask(key).then(
          (session) => {
            if (session !== null) cache?.set(key, session)
            return session
          },
          (error: unknown) => {
            report(error)
            throw error
          },
        )
        const settled = () => void inFlight.delete(key)
        pending.then(settled, settled)
        inFlight.set(key, pending)
      }
      return pending
    },
    forgetUser(openId) {
      cache?.dropUser(openId)
    },
    close: () => pool.close(),
  }
}

/**
 * HTTP Basic for the backend's credentials, each form-encoded first as RFC 6749 §2.3.1 asks (which
 * changes nothing in an id or secret BACKEND_CREDENTIALS accepts).
 */
function basicAuth({ id, secret }: { id: string; secret: string }): string {
  if (typeof id !== 'string' || id === '' || typeof secret !== 'string' || secret === '') {
    throw new TypeError('credentials: id and secret are required strings')
  }
  const encode = (value: string) => new URLSearchParams({ v: value }).toString().slice(2)
  return `Basic ${Buffer.from(`${encode(id)}:${encode(secret)}`).toString('base64')}`
}
