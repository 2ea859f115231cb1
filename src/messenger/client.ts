import type { FastifyBaseLogger } from 'fastify'
import { Agent, request } from 'undici'
import { AppError } from '../errors.js'
import { createAppSecrets, SERVER_HELD_PLACEHOLDER, type AppSecretsOptions } from './app-secrets.js'
import {
  DEFAULT_PLATFORM,
  PLATFORMS,
  type MessengerPlatform,
  type PlatformIdentity,
} from './platforms/index.js'
import type { ExchangeRequest } from './platforms/platform.js'

/** Who logged in, and through which app of which platform. */
export interface MessengerLogin extends PlatformIdentity {
  platform: string
  appId: string
}

export interface MessengerClient {
  /**
   * Exchanges a login code for the person's identity with the platform `appId` runs on
   * (MESSENGER_APP_PLATFORMS; WeChat's `code2session` by default), with the server-held secret of
   * `appId` when there is one, else with the client's `appSecret`. Throws
   * `failedMessengerAuthentication` when the platform refuses, `messengerPlatformUnavailable`
   * when it cannot be asked.
   */
  code2session(appId: string, appSecret: string, code: string): Promise<MessengerLogin>
  /** Closes the kept-alive connections to the platform. */
  close(): Promise<void>
}

export interface MessengerClientOptions {
  /** Each platform's API base URL, by platform id. */
  apiBaseUrls: ReadonlyMap<string, string>
  /** MESSENGER_APP_PLATFORMS: the platform of each appId it lists (others are WeChat's). */
  appPlatforms: ReadonlyMap<string, string>
  timeoutMs: number
  allowedAppIds: readonly string[] | null
  /** The secrets held on the server (MESSENGER_APP_SECRETS, and the sandbox's own app). */
  appSecrets: AppSecretsOptions
  /** Told of every call: whether the platform answered (no answer or a 5xx is a failure), and how long it took. */
  onCall?: (answered: boolean, seconds: number) => void
  /** Where a registration refused for the server's own setup says why. */
  log?: Pick<FastifyBaseLogger, 'warn'>
}

// Larger values cannot be real credentials; refusing them keeps junk off the upstream call.
const MAX_CREDENTIAL_LENGTH = 512

// A code2session answer is a few hundred bytes; a larger one is refused before it is read whole.
const MAX_ANSWER_BYTES = 64 * 1024

// Registrations arrive in bursts at term start; this many calls may be in flight at once.
const MAX_CONNECTIONS = 64

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
  const secretFor = createAppSecrets(options.appSecrets)
  const agent = new Agent({
    connections: MAX_CONNECTIONS,
    connectTimeout: options.timeoutMs,
    headersTimeout: options.timeoutMs,
    bodyTimeout: options.timeoutMs,
    maxResponseSize: MAX_ANSWER_BYTES,
  })

  /** The platform `appId` runs on, with its API's base URL. */
  function platformOf(appId: string): { platform: MessengerPlatform; baseUrl: string } {
    const id = options.appPlatforms.get(appId) ?? DEFAULT_PLATFORM
    const platform = PLATFORMS.get(id)
    const baseUrl = options.apiBaseUrls.get(id)
    // The configuration names only platforms that exist, each with its base URL.
    if (platform === undefined || baseUrl === undefined) throw new Error(`no platform ${id}`)
    return { platform, baseUrl }
  }

  /** The answer's status and text, within `timeoutMs` for the whole exchange. */
  async function send(exchange: ExchangeRequest): Promise<{ status: number; text: string }> {
    const abort = new AbortController()
    const timer = setTimeout(() => abort.abort(new Deadline()), options.timeoutMs)
    const started = process.hrtime.bigint()
    let answered = false
    try {
      const response = await request(exchange.url, {
        dispatcher: agent,
        signal: abort.signal,
        method: exchange.method,
        ...(exchange.json === undefined
          ? {}
          : {
              body: JSON.stringify(exchange.json),
              headers: { 'content-type': 'application/json' },
            }),
      })
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
      const { platform, baseUrl } = platformOf(appId)
      const exchange = platform.exchangeRequest(baseUrl, { appId, secret: appSecret }, code)

      // No retry: a login code is single-use, and a retried request could spend it twice.
      let body: Record<string, unknown>
      try {
        const response = await send(exchange)
        if (response.status < 200 || response.status > 299) {
          throw new PlatformAnswer(`code2session answered HTTP ${response.status}`)
        }
        // WeChat labels its JSON text/plain, so every answer is read as text and parsed.
        const parsed: unknown = JSON.parse(response.text)
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
          throw new PlatformAnswer('code2session answered JSON that is not an object')
        }
        body = parsed as Record<string, unknown>
      } catch (cause) {
        throw new AppError('messengerPlatformUnavailable', {
          cause: new Error(`${platform.id}: ${unavailableReason(cause)}`),
        })
      }
      const answer = platform.readAnswer(body)
      if (answer.kind === 'unavailable') {
        throw new AppError('messengerPlatformUnavailable', {
          cause: new Error(`${platform.id}: ${answer.reason}`),
        })
      }
      if (answer.kind === 'refused') throw new AppError('failedMessengerAuthentication')
      return { ...answer.identity, platform: platform.id, appId }
    },
  }
}
