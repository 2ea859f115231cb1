// The one stand-in of the kit's tests: the platform object, written as WeChat documents wx.login,
// wx.request and the storage calls. login mints a real code at campusgate's sandbox messenger;
// request goes over real HTTP. Nothing of campusgate is imitated.
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

export interface TestWx extends Platform {
  /** How many times login was called. */
  logins: number
  /** Every request, in the order sent. */
  sent: SentRequest[]
  /** What is kept in storage. */
  storage: Map<string, unknown>
  /** Runs after a response arrived and before `success` sees it (to act "elsewhere" in between). */
  onResponse: ((request: SentRequest, statusCode: number, data: unknown) => Promise<void>) | null
  /** Makes login fail as wx.login does when the platform cannot sign in. */
  failLogin: boolean
  /** Makes the storage calls throw, as wx's do when storage is full or unavailable. */
  failStorage: boolean
}

/**
 * A `wx` for one user: each login mints a code for `openId` at `messengerUrl` (campusgate's
 * sandbox: `${url}/_sandbox/messenger`), as the real wx.login hands the mini-program a code.
 */
export function createWx(messengerUrl: string, openId: string): TestWx {
  const wx: TestWx = {
    logins: 0,
    sent: [],
    storage: new Map(),
    onResponse: null,
    failLogin: false,
    failStorage: false,

    login(options) {
      wx.logins += 1
      if (wx.failLogin) {
        setTimeout(() => options.fail({ errMsg: 'login:fail network error' }), 0)
        return
      }
      fetch(`${messengerUrl}/login-codes`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ openId }),
      })
        .then(async (response) => {
          if (response.status !== 200) throw new Error(`login-codes answered ${response.status}`)
          const { code } = (await response.json()) as { code: string }
          options.success({ code })
        })
        .catch((error: unknown) => options.fail({ errMsg: `login:fail ${String(error)}` }))
    },

    // https://developers.weixin.qq.com/miniprogram/dev/api/network/request/wx.request.html:
    // method defaults to GET; an object `data` goes into the query string for GET and is sent as
    // JSON when content-type is application/json (its default); with dataType json (the default)
    // the answer is parsed when it is JSON; success is called for every HTTP status, fail only
    // when no answer came; complete after either.
    request(options: PlatformRequestOptions & { complete?: () => void }) {
      const method = options.method ?? 'GET'
      const header: Record<string, string> = { ...options.header }
      const contentTypeName =
        Object.keys(header).find((name) => name.toLowerCase() === 'content-type') ?? null
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
      wx.sent.push(sent)
      const signal = AbortSignal.timeout(options.timeout ?? 60_000)
      fetch(url, { method, headers: header, body, signal, redirect: 'manual' })
        .then(async (response) => {
          const text = await response.text()
          let parsed: unknown = text
          try {
            parsed = JSON.parse(text)
          } catch {
            // Not JSON: wx hands the text over as it came.
          }
          const responseHeader: Record<string, string> = {}
          response.headers.forEach((value, name) => (responseHeader[name] = value))
          sent.statusCode = response.status
          sent.responseHeader = responseHeader
          if (wx.onResponse !== null) await wx.onResponse(sent, response.status, parsed)
          options.success({ statusCode: response.status, data: parsed, header: responseHeader })
        })
        .catch((error: unknown) => options.fail({ errMsg: `request:fail ${String(error)}` }))
        .finally(() => options.complete?.())
    },

    getStorageSync(key) {
      if (wx.failStorage) throw new Error('getStorageSync:fail storage unavailable')
      // wx answers '' for a key it does not hold.
      return wx.storage.has(key) ? wx.storage.get(key) : ''
    },
    setStorageSync(key, data) {
      // What wx throws past its 10 MB of storage.
      if (wx.failStorage) throw new Error('setStorageSync:fail exceed storage max size 10M')
      wx.storage.set(key, data)
    },
    removeStorageSync(key) {
      if (wx.failStorage) throw new Error('removeStorageSync:fail storage unavailable')
      wx.storage.delete(key)
    },
  }
  return wx
}
