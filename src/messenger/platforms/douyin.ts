import type { ExchangeAnswer, MessengerPlatform } from './platform.js'
import { textField } from './platform.js'

// Douyin's "system error": try again later.
const SYSTEM_ERROR = -1

/**
 * Douyin (and the other ByteDance apps) mini-programs (DOUYIN_API_BASE_URL): `POST
 * …/api/apps/v2/jscode2session` with a JSON body of `appid`, `secret` and `code`, answered with
 * `err_no` (0 is success) and `data: { openid, session_key, unionid }`.
 */
export const douyin: MessengerPlatform = {
  id: 'douyin',
  apiBaseUrlVariable: 'DOUYIN_API_BASE_URL',
  defaultApiBaseUrl: 'https://developer.toutiao.com',
  exchangeRequest(baseUrl, { appId, secret }, code) {
    return {
      method: 'POST',
      url: new URL(`${baseUrl}/api/apps/v2/jscode2session`),
      json: { appid: appId, secret, code, anonymous_code: '' },
    }
  },
  readAnswer(body): ExchangeAnswer {
    const errNo = typeof body.err_no === 'number' ? body.err_no : 0
    if (errNo === SYSTEM_ERROR) return { kind: 'unavailable', reason: 'platform busy (err_no -1)' }
    const data = body.data
    if (errNo !== 0 || typeof data !== 'object' || data === null) return { kind: 'refused' }
    const fields = data as Record<string, unknown>
    const openId = textField(fields, 'openid')
    const sessionKey = fields.session_key
    if (openId === null || typeof sessionKey !== 'string') return { kind: 'refused' }
    return {
      kind: 'identity',
      identity: { openId, unionId: textField(fields, 'unionid'), sessionKey },
    }
  },
}
