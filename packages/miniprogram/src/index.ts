import {
  ABORTED,
  CampusgateError,
  LOGIN_FAILED,
  NETWORK_FAILED,
  REQUEST_FAILED,
  STORAGE_FAILED,
  TIMED_OUT,
  UNEXPECTED_ANSWER,
  URL_NOT_ALLOWED,
} from './error.js'
import {
  errorCode,
  failureOf,
  handled,
  isSuccess,
  ok,
  retryAfterSeconds,
  wire,
  type Response,
} from './answers.js'
import {
  createKeyStore,
  type SessionChange,
  type SessionChangeReason,
  type SignedIn,
} from './key-store.js'
import type { Method, Platform, PlatformRequestOptions, RequestData } from './platform.js'
import {
  abortable,
  MIN_POLL_INTERVAL_MS,
  waitForTier,
  type WaitOptions,
  type WaitSignal,
} from './wait-for-tier.js'
import { backendOrigins, resolveUrl } from './urls.js'
import {
  MEDIA_TYPE,
  SERVER_HELD,
  TIERS,
  WIRE_ERRORS,
  type DeviceSession,
  type MessengerPlatform,
  type RegisterMessengerAnswer,
  type RegisterMessengerBody,
  type RegisterUniversityBody,
  type Session,
  type SessionsAnswer,
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
  URL_NOT_ALLOWED,
}
export type { Method, Platform, PlatformRequestOptions, RequestData, Response }
export { abortable, MEDIA_TYPE, MIN_POLL_INTERVAL_MS, SERVER_HELD, TIERS, WIRE_ERRORS }
export type {
  DeviceSession,
  MessengerPlatform,
  RegisterMessengerAnswer,
  RegisterMessengerBody,
  RegisterUniversityBody,
  Session,
  SessionChange,
  SessionChangeReason,
  SessionsAnswer,
  Tier,
  WaitOptions,
  WaitSignal,
}

/** The longest `Retry-After` a request waits out by itself, in seconds. */
export const MAX_RETRY_AFTER_SECONDS = 10

/**
 * A key a renewal issued that is refused again within this many milliseconds is not renewed
 * again: a backend or gateway that refuses every key cannot make the kit register on every call.
 */
export const RENEWAL_GRACE_MS = 30_000

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
  /**
   * The origins of the app's own backends (guarded by campusgate-node), e.g.
   * `['https://forum.example.edu']`: `request()` sends the key to absolute URLs under these, and
   * to nothing else but campusgate.
   */
  backends?: readonly string[]
  /**
   * The name this device's session carries (at most 64 characters), e.g. the one the user gave it:
   * what `sessions()` and campusgate's console show instead of the platform's `User-Agent`.
   */
  deviceName?: string
}

export interface LogoutOptions {
  /** `'all'`: end every session of the person, on every device (POST /logout?scope=all). */
  scope?: 'all'
}

/** wx.request's option names. */
export interface RequestOptions {
  /** A path under `baseUrl` (`/session`), or an absolute URL under one of `backends`. */
  url: string
  method?: Method
  data?: RequestData
  header?: Record<string, string>
  timeout?: number
  /** `false`: send no session key and never sign in (for public routes). */
  auth?: boolean
}

export interface LoginOptions {
  /** Register anew even when the kept key is still live. */
  fresh?: boolean
}

export interface Campusgate {
  /**
   * The kept key's session when it is still live (checked with GET /session); otherwise, or with
   * `fresh`, the platform's login and POST /register/messenger, keeping the new key.
   */
  login(options?: LoginOptions): Promise<Session>
  /**
   * One call with the session key, to campusgate or to one of `backends`. Signs in first when no
   * key is kept; a key refused with 401 `invalid-session-key` gets one new login and one retry —
   * when a backend refused it, only after GET /session says campusgate has ended it too (a live
   * key is never renewed: the call rejects with the backend's 401); a 429 with `Retry-After` of
   * at most ten seconds is waited out once. Resolves for a 2xx, otherwise rejects with a
   * CampusgateError.
   */
  request<T = unknown>(options: RequestOptions): Promise<Response<T>>
  /** GET /session: who the kept key belongs to and its tier. */
  session(): Promise<Session>
  /** POST /register/university: campusgate mails the confirmation link to `email`. */
  registerUniversity(email: string): Promise<void>
  /**
   * POST /logout (with `scope: 'all'`, every session of the person ends); the kept key is
   * forgotten once campusgate answered 200 or 401.
   */
  logout(options?: LogoutOptions): Promise<void>
  /** DELETE /user; the kept key is forgotten once campusgate answered 200 or 401. */
  erase(): Promise<void>
  /**
   * Polls GET /session, at most every 2 s, until the session has `tier`: what a page shows after
   * the user opened the emailed link. Rejects with `@client/timed-out` once `timeoutMs` passed,
   * `@client/aborted` when `signal` aborts.
   */
  waitForTier(tier: Tier, options: WaitOptions): Promise<Session>
  /** GET /sessions: the user's live sessions, one per device; `current` is this one. */
  sessions(): Promise<DeviceSession[]>
  /** DELETE /sessions/{id}: ends one of them (this device's own too: the key is then forgotten). */
  endSession(id: string): Promise<void>
  /**
   * Calls `listener` when the kit signs in (`signed-in`), signs in again because its key was
   * refused (`renewed`: this device was signed out, by a logout elsewhere, an operator, or expiry,
   * and may have lost its tier), and when a logout or erasure ends the key (`signed-out`,
   * `erased`). Listeners hear the changes of every instance on the same storageKey. Returns the
   * function that removes it (call it in `onUnload`).
   */
  onSessionChange(listener: (change: SessionChange) => void): () => void
}

const INVALID_SESSION_KEY = WIRE_ERRORS.invalidSessionKey.code

/** A 401 that says the key is unknown, ended or expired (not a backend's own 401). */
function refusesKey(response: Response): boolean {
  return response.statusCode === 401 && errorCode(response) === INVALID_SESSION_KEY
}

export function createCampusgate(options: CampusgateOptions): Campusgate {
  if ('appSecret' in options) {
    throw new TypeError(
      'createCampusgate: appSecret is no longer an option. Remove the AppSecret from the ' +
        "mini-program (every copy of it carries it), reset it in the platform's console, and give " +
        "the new one to campusgate's MESSENGER_APP_SECRETS instead.",
    )
  }
  const { appId, platform, deviceName } = options
  if (deviceName !== undefined && (typeof deviceName !== 'string' || deviceName.length > 64)) {
    throw new TypeError('createCampusgate: deviceName is a string of at most 64 characters')
  }
  const storageKey = options.storageKey ?? 'campusgate.sessionKey'
  const baseUrl = options.baseUrl.replace(/\/+$/, '')
  const backends = backendOrigins(options.backends)
  const keys = createKeyStore(platform, storageKey)
  const { shared } = keys

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

  function notAllowed(url: unknown): CampusgateError {
    return new CampusgateError(
      0,
      URL_NOT_ALLOWED,
      `${JSON.stringify(url)} is neither a path under baseUrl nor under one of backends ` +
        `(${backends.join(', ') || 'none listed'}): nothing was sent`,
    )
  }

  /** Sends one request as it is; resolves with any answer, rejects only when none came. */
  function send(request: RequestOptions, key: string | null): Promise<Response> {
    const target = resolveUrl(request.url, baseUrl, backends)
    if (target === null) return Promise.reject(notAllowed(request.url))
    const header: Record<string, string> = {}
    let accept: string | null = null
    for (const [name, value] of Object.entries(request.header ?? {})) {
      const lower = name.toLowerCase()
      if (lower === 'accept') accept = value
      else if (lower !== 'authorization') header[name] = value
    }
    // campusgate speaks its v1 media type; a backend gets what the caller asked for.
    header.Accept = target.toCampusgate ? MEDIA_TYPE : (accept ?? 'application/json')
    if (key !== null) header.Authorization = key
    const hasContentType = Object.keys(header).some((name) => name.toLowerCase() === 'content-type')
    if (request.data !== undefined && !hasContentType) header['Content-Type'] = 'application/json'
    return new Promise((resolve, reject) => {
      const call: PlatformRequestOptions = {
        url: target.url,
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

  function emit(change: SessionChange): void {
    for (const listener of [...shared.listeners]) {
      try {
        listener(change)
      } catch {
        // A listener's failure is the app's; the kit's call goes on.
      }
    }
  }

  /** GET /session with `key` as it is: no sign-in, no retry. */
  async function readSession(key: string): Promise<Response> {
    const response = await send({ url: '/session' }, key)
    if (isSuccess(response) && keys.kept() === key) {
      const { sessionId } = response.data as { sessionId?: unknown }
      if (typeof sessionId === 'string') shared.sessionId = sessionId
    }
    return response
  }

  /**
   * The platform's login, POST /register/messenger and GET /session with the new key; the key is
   * kept and the listeners hear `reason`. A new key refused at once rejects with that 401.
   */
  async function signIn(reason: 'signed-in' | 'renewed'): Promise<SignedIn> {
    const code = await platformCode()
    const response = await send(
      {
        url: '/register/messenger',
        method: 'POST',
        data: wire<RegisterMessengerBody>({
          appId,
          appSecret: SERVER_HELD,
          code,
          ...(deviceName === undefined || deviceName === '' ? {} : { device: deviceName }),
        }),
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
    const key = body.sessionKey
    keys.keep(key)
    shared.renewed = reason === 'renewed' ? { key, at: Date.now() } : null
    let session: Session | null = null
    const read = await readSession(key).catch(() => null)
    if (read !== null && refusesKey(read)) {
      // Ended before it was ever used (another device's registration, say): nothing to keep.
      keys.forgetIfKept(key)
      throw failureOf(read)
    }
    if (read !== null && isSuccess(read)) session = read.data as Session
    emit({ reason, session })
    return { key, session }
  }

  /**
   * A key to use instead of `stale`: the login in flight, a key another request already got, or
   * a new login. Requests that fail at once thus share one login.
   */
  function renew(stale: string | null, reason: 'signed-in' | 'renewed'): Promise<SignedIn> {
    if (keys.pending !== null) return keys.pending
    const kept = keys.kept()
    if (kept !== null && kept !== stale) return Promise.resolve({ key: kept, session: null })
    const pending = signIn(reason).then(
      (signedIn) => {
        keys.pending = null
        return signedIn
      },
      (error: unknown) => {
        keys.pending = null
        throw error
      },
    )
    keys.pending = pending
    return pending
  }

  /** Whether `key` is one a renewal issued so recently that a refusal of it is not renewed. */
  function renewedJustNow(key: string): boolean {
    const { renewed } = shared
    return renewed !== null && renewed.key === key && Date.now() - renewed.at < RENEWAL_GRACE_MS
  }

  function toCampusgate(url: string): boolean {
    return resolveUrl(url, baseUrl, backends)?.toCampusgate === true
  }

  /** Whether campusgate itself says `key` has ended (no answer, a 429 or a 5xx say nothing). */
  async function endedAtCampusgate(key: string): Promise<boolean> {
    const read = await readSession(key).catch(() => null)
    return read !== null && refusesKey(read)
  }

  async function request<T>(options: RequestOptions): Promise<Response<T>> {
    // Before anything: a URL the key must not reach is refused with nothing sent, not even a login.
    if (resolveUrl(options.url, baseUrl, backends) === null) throw notAllowed(options.url)
    let key = options.auth === false ? null : (keys.kept() ?? (await renew(null, 'signed-in')).key)
    let response = await send(options, key)
    let signedInAgain = false
    let waited = false
    for (;;) {
      if (key !== null && !signedInAgain && refusesKey(response) && !renewedJustNow(key)) {
        // A backend's refusal is checked with campusgate first: a backend pointed at another
        // campusgate, or one that refuses every key, must not make a session on each call.
        if (!toCampusgate(options.url) && !(await endedAtCampusgate(key))) {
          return ok(response) as Response<T>
        }
        signedInAgain = true
        key = (await renew(key, 'renewed')).key
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
    if (keys.kept() === null) {
      const signedIn = await renew(null, 'signed-in')
      if (signedIn.session !== null) return signedIn.session
    }
    const response = await request<Session>({ url: '/session' })
    const { sessionId } = response.data as { sessionId?: unknown }
    if (typeof sessionId === 'string') shared.sessionId = sessionId
    return response.data
  }

  /** The key is done with (a logout, an erasure, its session ended): forget it and say so. */
  function ended(key: string | null, reason: 'signed-out' | 'erased'): void {
    if (key === null ? keys.kept() === null : keys.kept() !== key) return
    keys.forget()
    shared.renewed = null
    emit({ reason, session: null })
  }

  return {
    async login(loginOptions = {}) {
      const kept = keys.kept()
      if (loginOptions.fresh !== true && kept !== null) {
        const response = await readSession(kept)
        if (isSuccess(response)) return response.data as Session
        // Anything but "this key has ended" (offline, 429, 5xx) leaves the key as it is.
        if (!refusesKey(response)) throw failureOf(response)
      }
      const reason = kept === null || loginOptions.fresh === true ? 'signed-in' : 'renewed'
      const signedIn =
        loginOptions.fresh === true ? await signIn(reason) : await renew(kept, reason)
      return signedIn.session ?? (await session())
    },
    request,
    session,

    async registerUniversity(email) {
      const data = wire<RegisterUniversityBody>({ email })
      await request({ url: '/register/university', method: 'POST', data })
    },
    async logout(logoutOptions = {}) {
      const key = keys.kept()
      if (key === null) return
      const url = logoutOptions.scope === 'all' ? '/logout?scope=all' : '/logout'
      const response = await send({ url, method: 'POST' }, key)
      // 200 ended the key; 401 says it had already ended elsewhere: either way it is done with.
      // Anything else (no answer, 429, 5xx) leaves it valid, so it is kept.
      if (response.statusCode === 401 || isSuccess(response)) ended(key, 'signed-out')
      if (response.statusCode !== 401) ok(response)
    },
    async erase() {
      try {
        await request({ url: '/user', method: 'DELETE' })
      } catch (error) {
        // The kit has signed in again once already: a 401 now means no key of this user works.
        if (error instanceof CampusgateError && error.status === 401) ended(keys.kept(), 'erased')
        throw error
      }
      // The user is gone, and every key of the user with it.
      ended(keys.kept(), 'erased')
    },
    waitForTier: (tier, waitOptions) => waitForTier(session, tier, waitOptions),

    async sessions() {
      const response = await request<SessionsAnswer>({ url: '/sessions' })
      const listed = response.data.sessions
      const current = listed.find((device) => device.current)
      if (current !== undefined) shared.sessionId = current.id
      return listed
    },
    async endSession(id) {
      if (typeof id !== 'string' || id === '') throw new TypeError('endSession: id is required')
      const own = id === shared.sessionId ? keys.kept() : null
      await request({ url: `/sessions/${encodeURIComponent(id)}`, method: 'DELETE' })
      // This device's own session: its key has ended with it.
      if (own !== null) ended(own, 'signed-out')
    },
    onSessionChange(listener) {
      shared.listeners.add(listener)
      return () => void shared.listeners.delete(listener)
    },
  }
}
