import type { FastifyBaseLogger } from 'fastify'
import { Agent, request } from 'undici'
import { AppError } from '../errors.js'
import { createAppSecrets, SERVER_HELD_PLACEHOLDER, type AppSecretsOptions } from './app-secrets.js'
import type { MessengerIdentity } from '../sessions/service.js'

export interface MessengerClient {
  /**
   * Exchanges a login code for the user's identity (WeChat `code2session`), with the server-held
   * secret of `appId` when there is one, else with the client's `appSecret`. Throws
   * `failedMessengerAuthentication` when the platform refuses, `messengerPlatformUnavailable`
   * when it cannot be asked.
   */
  code2session(appId: string, appSecret: string, code: string): Promise<MessengerIdentity>
  /** Closes the kept-alive connections to the platform. */
  close(): Promise<void>
}

export interface MessengerClientOptions {
  apiBaseUrl: string
  timeoutMs: number
  allowedAppIds: readonly string[] | null
  /** The secrets held on the server (MESSENGER_APP_SECRETS, and the sandbox's own app). */
  appSecrets: AppSecretsOptions
  /** Told of every call: whether the platform answered (no answer or a 5xx is a failure), and how long it took. */
  onCall?: (answered: boolean, seconds: number) => void
  /** Where a registration refused for the server's own setup says why. */
  log?: Pick<FastifyBaseLogger, 'warn'>
}

// WeChat answers HTTP 200 for refusals too; errcode -1 is its "system busy".
const PLATFORM_BUSY = -1

// Larger values cannot be real credentials; refusing them keeps junk off the upstream call.
const MAX_CREDENTIAL_LENGTH = 512

// A code2session answer is a few hundred bytes; a larger one is refused before it is read whole.
const MAX_ANSWER_BYTES = 64 * 1024

// Registrations arrive in bursts at term start; this many calls may be in flight at once.
const MAX_CONNECTIONS = 64

interface Code2SessionBody {
  openid?: unknown
  session_key?: unknown
  unionid?: unknown
  errcode?: unknown
}

/** An answer of the platform we refuse; its message is ours and safe to log. */
class PlatformAnswer extends Error {}

/** The call outlived `timeoutMs`. */
class Deadline extends Error {
  override name = 'TimeoutError'
}

/**
 * Why the platform could not be asked, for the logs, from the error's kind alone: the messages of
 * HTTP and JSON errors can quote the request URL or the answer, which carry the secret and the
 * login code. (Redacting them would let a client's `appSecret` pick what the logs hide.)
 */
function unavailableReason(cause: unknown): string {
  if (cause instanceof PlatformAnswer) return cause.message
  if (cause instanceof SyntaxError) return 'code2session answered something that is not JSON'
  const name = cause instanceof Error ? cause.name : 'Error'
  const code = (cause as { code?: unknown } | null)?.code
  return typeof code === 'string' && /^[A-Z_]{1,40}$/.test(code) ? `${name} (${code})` : name
}

/**
 * The platform is asked through undici's `request` on kept-alive connections: a registration's
 * round trip is most of its CPU, and `fetch` costs several times as much per call for the same
 * GET (docs/performance.md).
 */
export function createMessengerClient(options: MessengerClientOptions): MessengerClient {
  const endpoint = `${options.apiBaseUrl}/sns/jscode2session`
  const secretFor = createAppSecrets(options.appSecrets)
  const agent = new Agent({
    connections: MAX_CONNECTIONS,
    connectTimeout: options.timeoutMs,
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    maxResponseSize: MAX_ANSWER_BYTES,
  })

  /** The answer's status and text, within `timeoutMs` for the whole exchange. */
  async function get(url: URL): Promise<{ status: number; text: string }> {
    const abort = new AbortController()
    const timer = setTimeout(() => abort.abort(new Deadline()), options.timeoutMs)
    const started = process.hrtime.bigint()
    let answered = false
    try {
      const response = await request(url, { dispatcher: agent, signal: abort.signal })
      const text = await response.body.text()
      answered = response.statusCode < 500
      return { status: response.statusCode, text }
    } catch (error) {
      throw abort.signal.aborted ? (abort.signal.reason as Error) : error
    } finally {
      clearTimeout(timer)
      options.onCall?.(answered, Number(process.hrtime.bigint() - started) / 1e9)
    }
  }

  return {
    close: () => agent.close(),
    async code2session(appId, clientSecret, code) {
      const appSecret = secretFor(appId, clientSecret)
      if ([appId, appSecret, code].some((value) => value.length > MAX_CREDENTIAL_LENGTH)) {
        throw new AppError('failedMessengerAuthentication')
      }
      if (options.allowedAppIds !== null && !options.allowedAppIds.includes(appId)) {
        throw new AppError('failedMessengerAuthentication')
      }
      // The client left the secret to the server, which holds none for this app: the platform
      // would refuse the placeholder, so it is not asked. The answer stays the wire's 401; the log
      // says what to fix (typically a move from the sandbox to a real appId).
      if (appSecret === SERVER_HELD_PLACEHOLDER) {
        options.log?.warn(
          { event: 'messenger-secret-missing', appId },
          `registration refused: the client sent the placeholder ${SERVER_HELD_PLACEHOLDER} and ` +
            `MESSENGER_APP_SECRETS holds no secret for appId ${appId} (add ${appId}:<AppSecret> to it)`,
        )
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
        const response = await get(url)
        if (response.status < 200 || response.status > 299) {
          throw new PlatformAnswer(`code2session answered HTTP ${response.status}`)
        }
        // WeChat labels this JSON text/plain, so the body is read as text and parsed.
        body = JSON.parse(response.text) as Code2SessionBody
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
