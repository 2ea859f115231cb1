import {
  AuthorizationResponseError,
  ResponseBodyError,
  WWWAuthenticateChallengeError,
} from 'openid-client'
import { redact } from '../lib/redact.js'

/**
 * docs/university-providers.md, "When a link fails: the log": every failure of the round trip is logged with what an
 * administrator needs to fix it (the provider's `error` and `error_description`, the HTTP status of
 * the failing call, the library's reason) and never a secret. This module turns what openid-client
 * throws, or what the provider sent to the redirect URI, into that one line.
 */

/** The most of the provider's own text (`error`, `error_description`) a line carries. */
const MAX_PROVIDER_TEXT = 200
const MAX_REASON = 600
/** How much of an error answer's body is read to find its `error` and `error_description`. */
const MAX_BODY_BYTES = 8192
/** openid-client wraps oauth4webapi's errors, which wrap the runtime's: a few levels say it all. */
const MAX_CAUSES = 5

/** The two answers docs/university-providers.md reads as the user declining: refusing at sign-in or at the consent page. */
const DECLINING_ERRORS: ReadonlySet<string> = new Set(['access_denied', 'consent_required'])

/** Whether the `error` the provider sent to the redirect URI means the user declined. */
export function userDeclined(error: string | undefined): boolean {
  return error !== undefined && DECLINING_ERRORS.has(error)
}

/** Provider-written text, fit for a log line: one line, bounded. */
function providerText(value: unknown): string | undefined {
  if (typeof value !== 'string' || value === '') return undefined
  // eslint-disable-next-line no-control-regex -- control characters would forge log lines
  const flat = value.replace(/[\u0000-\u001f\u007f]+/g, ' ')
  return flat.length > MAX_PROVIDER_TEXT ? `${flat.slice(0, MAX_PROVIDER_TEXT)}…` : flat
}

function providerError(error: unknown, description: unknown): string[] {
  const code = providerText(error)
  const text = providerText(description)
  return [
    ...(code === undefined ? [] : [`error=${code}`]),
    ...(text === undefined ? [] : [`error_description=${JSON.stringify(text)}`]),
  ]
}

/** The line for an `error` sent to the redirect URI (RFC 6749 §4.1.2.1). */
export function describeProviderAnswer(
  error: string | undefined,
  description: string | undefined,
  secrets: readonly (string | undefined)[] = [],
): string {
  const parts = providerError(error, description)
  const said = parts.length === 0 ? 'no code and no error' : parts.join(', ')
  return redact(`the provider answered the authorization request: ${said}`, known(secrets))
}

function known(secrets: readonly (string | undefined)[]): string[] {
  return secrets.filter((secret): secret is string => secret !== undefined && secret !== '')
}

interface OAuthErrorBody {
  error?: unknown
  error_description?: unknown
}

/** The start of an error answer's body, when it is the JSON error object of RFC 6749 §5.2. */
async function errorBody(response: Response): Promise<OAuthErrorBody> {
  if (response.bodyUsed || response.body === null) return {}
  const reader = (response.body as ReadableStream<Uint8Array>).getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  try {
    while (size < MAX_BODY_BYTES) {
      const { done, value } = await reader.read()
      if (done) break
      chunks.push(value)
      size += value.byteLength
    }
    await reader.cancel().catch(() => undefined)
    const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'))
    return typeof parsed === 'object' && parsed !== null ? parsed : {}
  } catch {
    return {}
  }
}

interface Facts {
  status?: number
  error?: unknown
  errorDescription?: unknown
  alg?: unknown
  chain: string[]
}

function field(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null
    ? (value as Record<string, unknown>)[name]
    : undefined
}

/** What the error chain says, outermost first; a Response in it gives its status and body. */
async function factsOf(error: unknown): Promise<Facts> {
  const facts: Facts = { chain: [] }
  let current: unknown = error
  let lastCode: string | undefined
  for (let depth = 0; depth < MAX_CAUSES && current !== undefined && current !== null; depth++) {
    if (current instanceof Response) {
      // RESPONSE_IS_NOT_CONFORM carries the answer itself.
      facts.status ??= current.status
      const body = await errorBody(current)
      facts.error ??= body.error
      facts.errorDescription ??= body.error_description
      break
    }
    if (Array.isArray(current)) {
      // A WWW-Authenticate challenge: `Basic error="invalid_client", error_description="…"`.
      for (const challenge of current) {
        const parameters = field(challenge, 'parameters')
        facts.error ??= field(parameters, 'error')
        facts.errorDescription ??= field(parameters, 'error_description')
      }
      break
    }
    if (!(current instanceof Error)) {
      // oauth4webapi's details: an error body, `{ alg }`, or `{ header: { alg } }`.
      facts.error ??= field(current, 'error')
      facts.errorDescription ??= field(current, 'error_description')
      facts.alg ??= field(current, 'alg') ?? field(field(current, 'header'), 'alg')
      break
    }
    const code = field(current, 'code')
    // openid-client repeats the code of the error it wraps.
    const newCode = typeof code === 'string' && code !== lastCode ? ` ${code}` : ''
    if (typeof code === 'string') lastCode = code
    facts.chain.push(`${current.name}${newCode}: ${current.message}`)
    // openid-client's own error classes (re-exported from oauth4webapi) say what the provider
    // answered; anything else is the library's or the runtime's reason, in the chain.
    if (current instanceof ResponseBodyError) {
      // An error answer of RFC 6749 §5.2: its status and its JSON error object.
      facts.status ??= current.status
      facts.error ??= current.error
      facts.errorDescription ??= current.error_description
    } else if (current instanceof WWWAuthenticateChallengeError) {
      // A 401 with a challenge: the body may name the error, else the challenge's parameters do.
      facts.status ??= current.status
      const body = await errorBody(current.response)
      facts.error ??= body.error
      facts.errorDescription ??= body.error_description
    } else if (current instanceof AuthorizationResponseError) {
      facts.error ??= current.error
      facts.errorDescription ??= current.error_description
    }
    current = current.cause
  }
  return facts
}

/**
 * The line for a failed call to the provider: which call, its HTTP status, the provider's `error`
 * and `error_description`, the algorithm of a refused ID token, and the library's own reason.
 * Secrets (client secret, code, PKCE verifier) are redacted should the provider echo them.
 */
export async function describeCallFailure(
  call: string,
  error: unknown,
  secrets: readonly (string | undefined)[],
): Promise<string> {
  const facts = await factsOf(error)
  const parts = [
    ...(facts.status === undefined ? [] : [`HTTP ${facts.status}`]),
    ...providerError(facts.error, facts.errorDescription),
  ]
  const alg = providerText(facts.alg)
  if (alg !== undefined) {
    parts.push(
      /^HS\d+$/.test(alg)
        ? `ID token signed with ${alg}, a symmetric algorithm campusgate does not verify (have the provider sign with RS256)`
        : `ID token algorithm ${alg} not supported`,
    )
  }
  parts.push(facts.chain.length === 0 ? String(error).slice(0, 100) : facts.chain.join(' ← '))
  const line = `${call} failed: ${parts.join(', ')}`
  return redact(line.length > MAX_REASON ? `${line.slice(0, MAX_REASON)}…` : line, known(secrets))
}
