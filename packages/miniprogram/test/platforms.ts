// The stand-ins of the kit's tests: the platform object as WeChat (`wx`), uni-app (`uni`) and Taro
// document login, request and the storage calls. Each login mints a real code at campusgate's
// sandbox messenger; each request goes over real HTTP. Nothing of campusgate is imitated.
import type { Platform, PlatformRequestOptions } from 'campusgate-miniprogram'

export interface SentRequest {
  /** When it was sent (Date.now()). */
  at: number
  url: string
  method: string
  header: Record<string, string>
  body: string | undefined
  /** What campusgate answered, once it has. */
  statusCode?: number
  responseHeader?: Record<string, string>
}

/** A platform object for one user's phone, with what the tests watch and steer. */
export interface TestPlatform extends Platform {
  /** How many times login was called. */
  logins: number
  /** Every request, in the order sent. */
  sent: SentRequest[]
  /** What is kept in storage. */
  storage: Map<string, unknown>
  /** Runs after a response arrived and before the caller sees it (to act "elsewhere" in between). */
  onResponse: ((request: SentRequest, statusCode: number, data: unknown) => Promise<void>) | null
  /** Makes login fail as the platform's does when it cannot sign in. */
  failLogin: boolean
  /** Makes the storage calls throw, as they do when storage is full or unavailable. */
  failStorage: boolean
}

/** The tests that run on WeChat alone call it what apps call it. */
export type TestWx = TestPlatform

interface LoginResult {
  code: string
  errMsg: string
}
interface RequestResult {
  statusCode: number
  data: unknown
  header: Record<string, string>
  errMsg: string
}
interface Failure {
  errMsg: string
}

/** How all three fail: with a plain `{ errMsg }`, never an Error. */
function failWith(errMsg: string): never {
  // eslint-disable-next-line @typescript-eslint/only-throw-error -- the platforms' own failure shape
  throw { errMsg } satisfies Failure
}

/**
 * The phone under the three shapes: login, request and storage as promises and plain calls, with
 * the behaviour the three document alike.
 */
function createPhone(messengerUrl: string, openId: string) {
  const state = {
    logins: 0,
    sent: [] as SentRequest[],
    storage: new Map<string, unknown>(),
    onResponse: null as TestPlatform['onResponse'],
    failLogin: false,
    failStorage: false,
  }

  async function login(name: string): Promise<LoginResult> {
    state.logins += 1
    if (state.failLogin) {
      await new Promise((resolve) => setTimeout(resolve, 0))
      failWith(`${name}:fail network error`)
    }
    try {
      const response = await fetch(`${messengerUrl}/login-codes`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ openId }),
      })
      if (response.status !== 200) throw new Error(`login-codes answered ${response.status}`)
      const { code } = (await response.json()) as { code: string }
      return { code, errMsg: `${name}:ok` }
    } catch (error) {
      failWith(`${name}:fail ${String(error)}`)
    }
  }

  // https://developers.weixin.qq.com/miniprogram/dev/api/network/request/wx.request.html, and
  // uni-app's and Taro's pages for request, which follow it: method defaults to GET; an object
  // `data` goes into the query string for GET and is sent as JSON when content-type is
  // application/json (its default); with dataType json (the default) the answer is parsed when it
  // is JSON; success for every HTTP status, fail only when no answer came.
  async function request(
    name: string,
    options: Omit<PlatformRequestOptions, 'success' | 'fail'>,
  ): Promise<RequestResult> {
    const method = options.method ?? 'GET'
    const header: Record<string, string> = { ...options.header }
    const contentTypeName =
      Object.keys(header).find((key) => key.toLowerCase() === 'content-type') ?? null
    if (contentTypeName === null) header['content-type'] = 'application/json'
    let url = options.url
    let body: string | undefined
    const data = options.data
    if (method === 'GET' && data !== undefined && typeof data === 'object') {
      const query = new URLSearchParams(
        Object.entries(data as Record<string, unknown>).map(([k, v]): [string, string] => [
          k,
          String(v),
        ]),
      ).toString()
      if (query !== '') url += (url.includes('?') ? '&' : '?') + query
    } else if (typeof data === 'string') {
      body = data
    } else if (data instanceof ArrayBuffer) {
      body = Buffer.from(data).toString('utf8')
    } else if (data !== undefined) {
      body = JSON.stringify(data)
    }
    const sent: SentRequest = { at: Date.now(), url, method, header, body }
    state.sent.push(sent)
    const signal = AbortSignal.timeout(options.timeout ?? 60_000)
    let response: globalThis.Response
    let text: string
    try {
      response = await fetch(url, { method, headers: header, body, signal, redirect: 'manual' })
      text = await response.text()
    } catch (error) {
      failWith(`${name}:fail ${String(error)}`)
    }
    let parsed: unknown = text
    try {
      parsed = JSON.parse(text)
    } catch {
      // Not JSON: handed over as it came.
    }
    const responseHeader: Record<string, string> = {}
    response.headers.forEach((value, key) => (responseHeader[key] = value))
    sent.statusCode = response.status
    sent.responseHeader = responseHeader
    if (state.onResponse !== null) await state.onResponse(sent, response.status, parsed)
    return {
      statusCode: response.status,
      data: parsed,
      header: responseHeader,
      errMsg: `${name}:ok`,
    }
  }

  // All three answer '' for a key they do not hold, and throw when storage fails.
  const storage = {
    getStorageSync(key: string): unknown {
      if (state.failStorage) throw new Error('getStorageSync:fail storage unavailable')
      return state.storage.has(key) ? state.storage.get(key) : ''
    },
    setStorageSync(key: string, data: unknown): void {
      // What the platforms throw past their 10 MB of storage.
      if (state.failStorage) throw new Error('setStorageSync:fail exceed storage max size 10M')
      state.storage.set(key, data)
    },
    removeStorageSync(key: string): void {
      if (state.failStorage) throw new Error('removeStorageSync:fail storage unavailable')
      state.storage.delete(key)
    },
  }

  return { state, login, request, storage }
}

type Phone = ReturnType<typeof createPhone>

interface Callbacks<T> {
  success?: (result: T) => void
  fail?: (error: Failure) => void
  complete?: (result: T | Failure) => void
}

/** Calls the callbacks the way all three do: success or fail, then complete. */
function settle<T>(work: Promise<T>, callbacks: Callbacks<T>): Promise<T> {
  return work.then(
    (result) => {
      callbacks.success?.(result)
      callbacks.complete?.(result)
      return result
    },
    (error: Failure) => {
      callbacks.fail?.(error)
      callbacks.complete?.(error)
      throw error
    },
  )
}

/** The instrumentation every stand-in shares, kept in step with the phone's state. */
function watched<T extends object>(phone: Phone, calls: T): TestPlatform & T {
  const { state } = phone
  const platform = Object.assign(calls, phone.storage) as unknown as TestPlatform & T
  for (const key of Object.keys(state) as (keyof typeof state)[]) {
    Object.defineProperty(platform, key, {
      get: () => state[key],
      set: (value: never) => (state[key] = value),
      enumerable: true,
    })
  }
  return platform
}

const hasCallbacks = (options: object): boolean =>
  ['success', 'fail', 'complete'].some((name) => name in options)

/**
 * WeChat's `wx`: callback forms. Since base library 2.10.2 an asynchronous call without callbacks
 * returns a promise instead, except request, which always returns its RequestTask.
 */
export function createWx(messengerUrl: string, openId: string): TestPlatform {
  const phone = createPhone(messengerUrl, openId)
  return watched(phone, {
    login(options: Callbacks<LoginResult> = {}) {
      const work = phone.login('login')
      if (!hasCallbacks(options)) return work
      void settle(work, options).catch(() => undefined)
      return undefined
    },
    request(options: PlatformRequestOptions & Callbacks<RequestResult>) {
      void settle(phone.request('request', options), options).catch(() => undefined)
      return { abort: () => undefined }
    },
  })
}

/**
 * uni-app's `uni` (Vue 3): an asynchronous call with success, fail or complete uses them and
 * returns nothing (request: its RequestTask); without any it returns a promise of the result that
 * rejects on failure (https://uniapp.dcloud.net.cn/api/#api-promise-化).
 */
export function createUni(messengerUrl: string, openId: string): TestPlatform {
  const phone = createPhone(messengerUrl, openId)
  return watched(phone, {
    login(options: Callbacks<LoginResult> = {}) {
      const work = phone.login('login')
      if (!hasCallbacks(options)) return work
      void settle(work, options).catch(() => undefined)
      return undefined
    },
    request(options: PlatformRequestOptions & Callbacks<RequestResult>) {
      const work = phone.request('request', options)
      if (!hasCallbacks(options)) return work
      void settle(work, options).catch(() => undefined)
      return { abort: () => undefined }
    },
  })
}

/**
 * Taro's default export: every asynchronous call returns a promise of the result that rejects on
 * failure, and calls success, fail and complete as well when given; request's promise is its
 * RequestTask, with abort (https://docs.taro.zone/docs/apis/network/request/).
 */
export function createTaro(messengerUrl: string, openId: string): TestPlatform {
  const phone = createPhone(messengerUrl, openId)
  return watched(phone, {
    login(options: Callbacks<LoginResult> = {}) {
      return settle(phone.login('login'), options)
    },
    request(options: PlatformRequestOptions & Callbacks<RequestResult>) {
      const task = settle(phone.request('request', options), options)
      return Object.assign(task, { abort: () => undefined })
    },
  })
}

/** The three platforms the kit is for, by the name an app knows them by. */
export const PLATFORMS = { wx: createWx, uni: createUni, Taro: createTaro } as const
