import type { Platform } from 'campusgate-miniprogram'

const OPEN_ID_KEY = 'campusgate.sandboxOpenId'

/**
 * The platform with login swapped for the sandbox's: `wx.login` hands out WeChat's codes, which
 * the sandbox's simulated messenger does not know, so login asks the sandbox for a code instead,
 * always for the same made-up user of this device. For `npm start`'s sandbox only.
 */
export function withSandboxLogin(platform: WechatMiniprogram.Wx, baseUrl: string): Platform {
  function sandboxOpenId(): string {
    const kept: unknown = platform.getStorageSync(OPEN_ID_KEY)
    if (typeof kept === 'string' && kept !== '') return kept
    // A made-up user name, not a secret: it only has to differ between devices.
    const made = `devtools-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`
    platform.setStorageSync(OPEN_ID_KEY, made)
    return made
  }

  return {
    login(options) {
      platform.request({
        url: `${baseUrl}/_sandbox/messenger/login-codes`,
        method: 'POST',
        data: { openId: sandboxOpenId() },
        success: (result) => {
          const code = (result.data as { code?: unknown } | null)?.code
          if (result.statusCode === 200 && typeof code === 'string') options.success({ code })
          else options.fail({ errMsg: `login:fail the sandbox answered ${result.statusCode}` })
        },
        fail: (error) => options.fail({ errMsg: error.errMsg }),
      })
    },
    request: (options) => platform.request(options),
    getStorageSync: (key) => platform.getStorageSync(key),
    setStorageSync: (key, data) => platform.setStorageSync(key, data),
    removeStorageSync: (key) => platform.removeStorageSync(key),
  }
}
