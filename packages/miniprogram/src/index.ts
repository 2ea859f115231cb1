import {
  ABORTED,
  CampusgateError,
  LOGIN_FAILED,
  NETWORK_FAILED,
  REQUEST_FAILED,
  STORAGE_FAILED,
  TIMED_OUT,
  UNEXPECTED_ANSWER,
} from './error.js'
import { sharedLogin } from './logins.js'
import type { Method, Platform, PlatformRequestOptions, RequestData } from './platform.js'
import {
  abortable,
  MIN_POLL_INTERVAL_MS,
  waitForTier,
  type WaitOptions,
  type WaitSignal,
} from './wait-for-tier.js'
import {
  MEDIA_TYPE,
  SERVER_HELD,
  TIERS,
  WIRE_ERRORS,
  type RegisterMessengerAnswer,
  type RegisterMessengerBody,
  type RegisterUniversityBody,
  type Session,
  type Tier,
} from './wire.js'

export {
  ABORTED,
  CampusgateError,
  LOGIN_FAILED,
  NETWORK_FAILED,
  REQUEST_FAILED,
  STORAGE_FAILED,
  TIMED_OUT,
  UNEXPECTED_ANSWER,
}
export type { Method, Platform, PlatformRequestOptions, RequestData }
export { abortable, MEDIA_TYPE, MIN_POLL_INTERVAL_MS, SERVER_HELD, TIERS, WIRE_ERRORS }
export type {
  RegisterMessengerAnswer,
  RegisterMessengerBody,
  RegisterUniversityBody,
  Session,
  Tier,
  WaitOptions,
  WaitSignal,
}

/** The longest `Retry-After` a request waits out by itself, in seconds. */
export const MAX_RETRY_AFTER_SECONDS = 10

export interface CampusgateOptions {
  /** campusgate's address, e.g. `https://campusgate.example.edu` (a path prefix is kept). */
  baseUrl: string
  /**
   * The mini-program's appId, sent with each login. There is no AppSecret option: anything in a
   * mini-program can be unpacked and read, so the secret stays on the server
   * (campusgate's MESSENGER_APP_SECRETS) and the kit sends the placeholder `server-held`.
   */
  appId: string
  /** `wx`, uni-app's `uni`, or Taro's default export. */
  platform: Platform
  /** Where the session key is kept in platform storage. */
  storageKey?: string
}

/** wx.request's option names; `url` is a path under `baseUrl`, such as `/session`. */
export interface RequestOptions {
  url: string
  method?: Method
  data?: RequestData
  header?: Record<string, string>
  timeout?: number
  /** `false`: send no session key and never sign in (for campusgate's public routes). */
  auth?: boolean
}

export interface Response<T = unknown> {
  statusCode: number
  data: T
  header: Record<string, string>
}

export interface Campusgate {
  /** Platform login, then POST /register/messenger; the key is kept in storage. */
  login(): Promise<void>
  /**
   * One call to campusgate with the session key. Signs in first when no key is kept; a key that
   * ended elsewhere gets one new login and one retry; a 429 with `Retry-After` of at most ten
   * seconds is waited out once. Resolves for a 2xx, otherwise rejects with a CampusgateError.
   */
  request<T = unknown>(options: RequestOptions): Promise<Response<T>>
  /** GET /session: who the kept key belongs to and its tier. */
  session(): Promise<Session>
  /** POST /register/university: campusgate mails the confirmation link to `email`. */
  registerUniversity(email: string): Promise<void>
  /** POST /logout; the kept key is forgotten once campusgate answered 200 or 401. */
  logout(): Promise<void>
  /** DELETE /user; the kept key is forgotten once campusgate answered 200 or 401. */
  erase(): Promise<void>
  /**
   * Polls GET /session, at most every 2 s, until the session has `tier`: what a page shows after
   * the user opened the emailed link. Rejects with `@client/timed-out` once `timeoutMs` passed,
   * `@client/aborted` when `signal` aborts.
   */
  waitForTier(tier: Tier, options: WaitOptions): Promise<Session>
}

const INVALID_SESSION_KEY = WIRE_ERRORS.invalidSessionKey.code

export function createCampusgate(options: CampusgateOptions): Campusgate {
  if ('appSecret' in options) {
    throw new TypeError(
      'createCampusgate: appSecret is no longer an option. Remove the AppSecret from the ' +
        "mini-program (every copy of it carries it), reset it in the platform's console, and give " +
        "the new one to campusgate's MESSENGER_APP_SECRETS instead.",
    )
  }
  const { appId, platform } = options
  const storageKey = options.storageKey ?? 'campusgate.sessionKey'
  const baseUrl = options.baseUrl.replace(/\/+$/, '')
  /** The one login in flight, shared with every instance on this storageKey. */
  const login = sharedLogin(platform, storageKey)

  function keptKey(): string | null {
    if (login.inMemory !== null) return login.inMemory
    let value: unknown
    try {
      value = platform.getStorageSync(storageKey)
    } catch {
      return null
    }
    return typeof value === 'string' && value !== '' ? value : null
  }

  /** Stores a new key; when storage refuses it, it is kept in memory and the caller told so. */
  function keep(key: string): void {
    try {
      platform.setStorageSync(storageKey, key)
      login.inMemory = null
    } catch (cause) {
      login.inMemory = key
      throw storageFailed(cause)
    }
  }

  /** Forgets `key` unless another instance has kept a newer one since. */
  function forgetIfKept(key: string | null): void {
    if (key !== null && keptKey() === key) forgetKey()
  }

  function forgetKey(): void {
    const onlyInMemory = login.inMemory !== null
    login.inMemory = null
    try {
      platform.removeStorageSync(storageKey)
    } catch (cause) {
      // A key that only memory held is gone; one that storage may still hold is worth reporting.
      if (!onlyInMemory) throw storageFailed(cause)
    }
  }

  function platformCode(): Promise<string> {
    return new Promise((resolve, reject) => {
      handled(
        platform.login({
          success: (result) => {
            if (typeof result?.code === 'string' && result.code !== '') resolve(result.code)
            else reject(new CampusgateError(0, LOGIN_FAILED, 'the platform gave no login code'))
          },
          fail: (error) => reject(new CampusgateError(0, LOGIN_FAILED, error?.errMsg)),
        }),
      )
    })
  }

  function send(request: RequestOptions, key: string | null): Promise<Response> {
    if (typeof request.url !== 'string' || !request.url.startsWith('/')) {
      return Promise.reject(
        new TypeError('request: url must be a path under baseUrl, like /session'),
      )
    }
    const header: Record<string, string> = {}
    for (const [name, value] of Object.entries(request.header ?? {})) {
      const lower = name.toLowerCase()
      if (lower !== 'accept' && lower !== 'authorization') header[name] = value
    }
    header.Accept = MEDIA_TYPE
    if (key !== null) header.Authorization = key
    const hasContentType = Object.keys(header).some((name) => name.toLowerCase() === 'content-type')
    if (request.data !== undefined && !hasContentType) header['Content-Type'] = 'application/json'
    return new Promise((resolve, reject) => {
      const call: PlatformRequestOptions = {
        url: baseUrl + request.url,
        method: request.method ?? 'GET',
        header,
        success: (result) =>
          resolve({
            statusCode: result.statusCode,
            data: result.data,
            header: result.header ?? {},
          }),
        fail: (error) => reject(new CampusgateError(0, NETWORK_FAILED, error?.errMsg)),
      }
      if (request.data !== undefined) call.data = request.data
      if (request.timeout !== undefined) call.timeout = request.timeout
      handled(platform.request(call))
    })
  }

  async function register(): Promise<string> {
    const code = await platformCode()
    const response = await send(
      {
        url: '/register/messenger',
        method: 'POST',
        data: wire<RegisterMessengerBody>({ appId, appSecret: SERVER_HELD, code }),
        auth: false,
      },
      null,
    )
    const body = ok(response).data as Partial<Record<keyof RegisterMessengerAnswer, unknown>>
    if (typeof body?.sessionKey !== 'string' || body.sessionKey === '') {
      throw new CampusgateError(
        response.statusCode,
        UNEXPECTED_ANSWER,
        'no sessionKey in the answer: is baseUrl campusgate?',
      )
    }
    keep(body.sessionKey)
    return body.sessionKey
  }

  /**
   * A key to use instead of `stale`: the login in flight, a key another request already got, or
   * a new login. Requests that fail at once thus share one login.
   */
  function renew(stale: string | null): Promise<string> {
    if (login.pending !== null) return login.pending
    const kept = keptKey()
    if (kept !== null && kept !== stale) return Promise.resolve(kept)
    const pending = register().then(
      (key) => {
        login.pending = null
        return key
      },
      (error: unknown) => {
        login.pending = null
        throw error
      },
    )
    login.pending = pending
    return pending
  }

  async function request<T>(options: RequestOptions): Promise<Response<T>> {
    let key = options.auth === false ? null : (keptKey() ?? (await renew(null)))
    let response = await send(options, key)
    let signedInAgain = false
    let waited = false
    for (;;) {
      if (key !== null && !signedInAgain && errorCode(response) === INVALID_SESSION_KEY) {
        signedInAgain = true
        key = await renew(key)
        response = await send(options, key)
        continue
      }
      if (response.statusCode === WIRE_ERRORS.rateLimitExceeded.status && !waited) {
        const seconds = retryAfterSeconds(response.header)
        if (seconds !== null && seconds <= MAX_RETRY_AFTER_SECONDS) {
          waited = true
          await new Promise((resolve) => setTimeout(resolve, seconds * 1000))
          response = await send(options, key)
          continue
        }
      }
      return ok(response) as Response<T>
    }
  }

  async function session(): Promise<Session> {
    return (await request<Session>({ url: '/session' })).data
  }

  return {
    async login() {
      await renew(keptKey())
    },
    request,
    session,

    async registerUniversity(email) {
      const data = wire<RegisterUniversityBody>({ email })
      await request({ url: '/register/university', method: 'POST', data })
    },
    async logout() {
      const key = keptKey()
      if (key === null) return
      const response = await send({ url: '/logout', method: 'POST' }, key)
      // 200 ended the key; 401 says it had already ended elsewhere: either way it is done with.
      // Anything else (no answer, 429, 5xx) leaves it valid, so it is kept.
      if (response.statusCode === 401 || isSuccess(response)) forgetIfKept(key)
      if (response.statusCode !== 401) ok(response)
    },
    async erase() {
      try {
        await request({ url: '/user', method: 'DELETE' })
      } catch (error) {
        // The kit has signed in again once already: a 401 now means no key of this user works.
        if (error instanceof CampusgateError && error.status === 401) forgetKey()
        throw error
      }
      // The user is gone, and every key of the user with it.
      forgetKey()
    },
    waitForTier: (tier, waitOptions) => waitForTier(session, tier, waitOptions),
  }
}

/**
 * Taro's calls return a promise even when given callbacks, and it rejects when `fail` is called:
 * the callbacks already report it, and left alone it would be an unhandled rejection.
 */
function handled(returned: unknown): void {
  const then = (returned as { then?: unknown } | null)?.then
  if (typeof then === 'function') then.call(returned, undefined, () => undefined)
}

function storageFailed(cause: unknown): CampusgateError {
  const detail = cause instanceof Error ? cause.message : (cause as { errMsg?: unknown })?.errMsg
  return new CampusgateError(0, STORAGE_FAILED, typeof detail === 'string' ? detail : undefined)
}

function errorCode(response: Response): string | null {
  const data = response.data as { error?: unknown } | null
  return typeof data === 'object' && data !== null && typeof data.error === 'string'
    ? data.error
    : null
}

/** A body of the wire's shape `T`, as wx.request's `data`. */
function wire<T extends object>(body: T): Record<string, unknown> {
  return body as unknown as Record<string, unknown>
}

function isSuccess(response: Response): boolean {
  return response.statusCode >= 200 && response.statusCode < 300
}

function ok(response: Response): Response {
  if (isSuccess(response)) return response
  throw new CampusgateError(
    response.statusCode,
    errorCode(response) ?? `@http/${response.statusCode}`,
    undefined,
    response.data,
    retryAfterSeconds(response.header) ?? undefined,
  )
}

/** `Retry-After` in seconds (a number or an HTTP date), or null when absent or unreadable. */
function retryAfterSeconds(header: Record<string, string>): number | null {
  const name = Object.keys(header).find((candidate) => candidate.toLowerCase() === 'retry-after')
  if (name === undefined) return null
  const value = String(header[name]).trim()
  if (/^\d+$/.test(value)) return Number(value)
  const date = Date.parse(value)
  return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - Date.now()) / 1000))
}
