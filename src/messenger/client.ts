import { AppError } from '../errors.js'
import type { MessengerIdentity } from '../sessions/service.js'

export interface MessengerClient {
  /**
   * Exchanges a login code for the user's identity (WeChat `code2session`). Throws
   * `failedMessengerAuthentication` when the platform refuses, `messengerPlatformUnavailable`
   * when it cannot be asked.
   */
  code2session(appId: string, appSecret: string, code: string): Promise<MessengerIdentity>
}

export interface MessengerClientOptions {
  apiBaseUrl: string
  timeoutMs: number
  allowedAppIds: readonly string[] | null
  fetch?: typeof fetch
}

// WeChat answers HTTP 200 for refusals too; errcode -1 is its "system busy".
const PLATFORM_BUSY = -1

// Larger values cannot be real credentials; refusing them keeps junk off the upstream call.
const MAX_CREDENTIAL_LENGTH = 512

interface Code2SessionBody {
  openid?: unknown
  session_key?: unknown
  unionid?: unknown
  errcode?: unknown
}

/** An answer of the platform we refuse; its message is ours and safe to log. */
class PlatformAnswer extends Error {}

/**
 * Why the platform could not be asked, for the logs, from the error's kind alone: the messages of
 * fetch and JSON errors can quote the request URL or the answer, which carry the secret and the
 * login code. (Redacting them would let a client's `appSecret` pick what the logs hide.)
 */
function unavailableReason(cause: unknown): string {
  if (cause instanceof PlatformAnswer) return cause.message
  if (cause instanceof SyntaxError) return 'code2session answered something that is not JSON'
  const name = cause instanceof Error ? cause.name : 'Error'
  const code = (cause as { cause?: { code?: unknown } } | null)?.cause?.code
  return typeof code === 'string' && /^[A-Z_]{1,40}$/.test(code) ? `${name} (${code})` : name
}

export function createMessengerClient(options: MessengerClientOptions): MessengerClient {
  const doFetch = options.fetch ?? fetch
  const endpoint = `${options.apiBaseUrl}/sns/jscode2session`

  return {
    async code2session(appId, appSecret, code) {
      if ([appId, appSecret, code].some((value) => value.length > MAX_CREDENTIAL_LENGTH)) {
        throw new AppError('failedMessengerAuthentication')
      }
      if (options.allowedAppIds !== null && !options.allowedAppIds.includes(appId)) {
        throw new AppError('failedMessengerAuthentication')
      }
      const url = new URL(endpoint)
      url.search = new URLSearchParams({
        appid: appId,
        secret: appSecret,
        js_code: code,
        grant_type: 'authorization_code',
      }).toString()

      // No retry: a login code is single-use, and a retried request could spend it twice.
      let body: Code2SessionBody
      try {
        const response = await doFetch(url, { signal: AbortSignal.timeout(options.timeoutMs) })
        if (!response.ok) {
          throw new PlatformAnswer(`code2session answered HTTP ${response.status}`)
        }
        // WeChat labels this JSON text/plain, so the body is read as text and parsed.
        body = JSON.parse(await response.text()) as Code2SessionBody
      } catch (cause) {
        throw new AppError('messengerPlatformUnavailable', {
          cause: new Error(unavailableReason(cause)),
        })
      }

      const errcode = typeof body.errcode === 'number' ? body.errcode : 0
      if (errcode === PLATFORM_BUSY) {
        throw new AppError('messengerPlatformUnavailable', {
          cause: new Error('platform busy (errcode -1)'),
        })
      }
      if (
        errcode !== 0 ||
        typeof body.openid !== 'string' ||
        body.openid === '' ||
        typeof body.session_key !== 'string'
      ) {
        throw new AppError('failedMessengerAuthentication')
      }
      return {
        openId: body.openid,
        unionId: typeof body.unionid === 'string' ? body.unionid : null,
        sessionKey: body.session_key,
      }
    },
  }
}
