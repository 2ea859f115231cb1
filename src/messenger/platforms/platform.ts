// The messenger side of the provider seam (docs/identities.md, "Platforms"): each platform a
// mini-program may run on is one module describing its login-code exchange, keyed by its id and
// listed in index.ts. The HTTP around it (timeouts, bounded answers, kept-alive connections, how
// failures are told apart for the logs) is the same for every platform (../client.ts).

/** What a platform's login-code exchange says about the person who logged in. */
export interface PlatformIdentity {
  openId: string
  /** The same for one person across the apps of one open-platform account; null if not sent. */
  unionId: string | null
  /** The platform's own session key for this login; stored encrypted. */
  sessionKey: string
}

/** One HTTP request of an exchange. */
export interface ExchangeRequest {
  method: 'GET' | 'POST'
  url: URL
  /** A JSON body (POST). */
  json?: Record<string, string>
}

/** The platform's answer as the exchange reads it. */
export type ExchangeAnswer =
  | { kind: 'identity'; identity: PlatformIdentity }
  /** The platform refused the login (a wrong code, appId or secret): 401 to the client. */
  | { kind: 'refused' }
  /** The platform said it could not answer now (busy): 502 to the client, with why for the log. */
  | { kind: 'unavailable'; reason: string }

export interface MessengerPlatform {
  /** The id `MESSENGER_APP_PLATFORMS` names it by, and the one the wire's `platform` shows. */
  readonly id: string
  /** The variable naming its API's base URL, and the platform's own when the variable is unset. */
  readonly apiBaseUrlVariable: string
  readonly defaultApiBaseUrl: string
  /** The login-code exchange for `appId` (with its secret) and the code the client sent. */
  exchangeRequest(
    baseUrl: string,
    app: { appId: string; secret: string },
    code: string,
  ): ExchangeRequest
  /** Reads a 2xx answer's parsed JSON body. */
  readAnswer(body: Record<string, unknown>): ExchangeAnswer
}

/** A non-empty string field of a platform's answer. */
export function textField(body: Record<string, unknown>, name: string): string | null {
  const value = body[name]
  return typeof value === 'string' && value !== '' ? value : null
}
