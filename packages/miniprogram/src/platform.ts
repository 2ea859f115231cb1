/**
 * What the kit needs of the mini-program platform: the callback forms of `login`, `request` and
 * the synchronous storage calls, which `wx`, uni-app's `uni` and Taro all have with these names.
 * `typecheck/platforms.ts` proves that `wx` (miniprogram-api-typings) fits.
 */
export interface Platform {
  login(options: {
    success: (result: { code: string }) => void
    fail: (error: { errMsg: string }) => void
  }): unknown
  request(options: PlatformRequestOptions): unknown
  getStorageSync(key: string): unknown
  setStorageSync(key: string, data: string): unknown
  removeStorageSync(key: string): unknown
}

/** The methods wx.request knows. */
export type Method = 'OPTIONS' | 'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE' | 'TRACE' | 'CONNECT'

/** A request body as wx.request takes it: an object (sent as JSON), a string or bytes. */
export type RequestData = string | Record<string, unknown> | ArrayBuffer

export interface PlatformRequestOptions {
  url: string
  method?: Method
  data?: RequestData
  header?: Record<string, string>
  timeout?: number
  success: (result: { statusCode: number; data: unknown; header: Record<string, string> }) => void
  fail: (error: { errMsg: string }) => void
}
