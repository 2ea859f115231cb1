import type { ExchangeAnswer, MessengerPlatform } from './platform.js'
import { textField } from './platform.js'

// WeChat answers HTTP 200 for refusals too; errcode -1 is its "system busy".
const PLATFORM_BUSY = -1

/**
 * The code2session of WeChat and of QQ, which copied it: `GET …/sns/jscode2session` with
 * `appid`, `secret`, `js_code` and `grant_type=authorization_code`, answered with `openid`,
 * `session_key` and `unionid`, or `errcode` and `errmsg`.
 */
export function code2sessionPlatform(
  id: string,
  apiBaseUrlVariable: string,
  defaultApiBaseUrl: string,
): MessengerPlatform {
  return {
    id,
    apiBaseUrlVariable,
    defaultApiBaseUrl,
    exchangeRequest(baseUrl, { appId, secret }, code) {
      const url = new URL(`${baseUrl}/sns/jscode2session`)
      url.search = new URLSearchParams({
        appid: appId,
        secret,
        js_code: code,
        grant_type: 'authorization_code',
      }).toString()
      return { method: 'GET', url }
    },
    readAnswer(body): ExchangeAnswer {
      const errcode = typeof body.errcode === 'number' ? body.errcode : 0
      if (errcode === PLATFORM_BUSY) {
        return { kind: 'unavailable', reason: 'platform busy (errcode -1)' }
      }
      const openId = textField(body, 'openid')
      const sessionKey = body.session_key
      if (errcode !== 0 || openId === null || typeof sessionKey !== 'string')
        return { kind: 'refused' }
      return {
        kind: 'identity',
        identity: { openId, unionId: textField(body, 'unionid'), sessionKey },
      }
    },
  }
}

/** WeChat mini-programs (MESSENGER_API_BASE_URL). */
export const wechat = code2sessionPlatform(
  'wechat',
  'MESSENGER_API_BASE_URL',
  'https://api.weixin.qq.com',
)
