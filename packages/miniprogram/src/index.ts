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
import {
  errorCode,
  handled,
  isSuccess,
  ok,
  retryAfterSeconds,
  wire,
  type Response,
} from './answers.js'
import { createKeyStore } from './key-store.js'
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
export type { Method, Platform, PlatformRequestOptions, RequestData, Response }
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
  const keys = createKeyStore(platform, storageKey)

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
    keys.keep(body.sessionKey)
    return body.sessionKey
  }

  /**
   * A key to use instead of `stale`: the login in flight, a key another request already got, or
   * a new login. Requests that fail at once thus share one login.
   */
  function renew(stale: string | null): Promise<string> {
    if (keys.pending !== null) return keys.pending
    const kept = keys.kept()
    if (kept !== null && kept !== stale) return Promise.resolve(kept)
    const pending = register().then(
      (key) => {
        keys.pending = null
        return key
      },
      (error: unknown) => {
        keys.pending = null
        throw error
      },
    )
    keys.pending = pending
    return pending
  }

  async function request<T>(options: RequestOptions): Promise<Response<T>> {
    let key = options.auth === false ? null : (keys.kept() ?? (await renew(null)))
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
      await renew(keys.kept())
    },
    request,
    session,

    async registerUniversity(email) {
      const data = wire<RegisterUniversityBody>({ email })
      await request({ url: '/register/university', method: 'POST', data })
    },
    async logout() {
      const key = keys.kept()
      if (key === null) return
      const response = await send({ url: '/logout', method: 'POST' }, key)
      // 200 ended the key; 401 says it had already ended elsewhere: either way it is done with.
      // Anything else (no answer, 429, 5xx) leaves it valid, so it is kept.
      if (response.statusCode === 401 || isSuccess(response)) keys.forgetIfKept(key)
      if (response.statusCode !== 401) ok(response)
    },
    async erase() {
      try {
        await request({ url: '/user', method: 'DELETE' })
      } catch (error) {
        // The kit has signed in again once already: a 401 now means no key of this user works.
        if (error instanceof CampusgateError && error.status === 401) keys.forget()
        throw error
      }
      // The user is gone, and every key of the user with it.
      keys.forget()
    },
    waitForTier: (tier, waitOptions) => waitForTier(session, tier, waitOptions),
  }
}
