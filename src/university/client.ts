import { redact } from '../lib/redact.js'
import type { UniversityIdentity } from './oidc-client.js'

export type TokenExchange = { ok: true; token: string } | { ok: false; reason: string }
export type UserLookup = { ok: true; identity: UniversityIdentity } | { ok: false; reason: string }

export interface UniversityClient {
  /**
   * Exchanges the callback's voucher for the user's university token (server to server). When the
   * provider names the `state` the voucher was issued for, it must be the callback's.
   */
  exchangeCode(code: string, state: string): Promise<TokenExchange>
  /** Who the token belongs to, from the user-data endpoint; `null` when none is configured. */
  fetchUser(token: string): Promise<UserLookup | null>
}

export interface UniversityClientOptions {
  tokenUrl: string
  /** UCL-API style user data: `GET userInfoUrl?client_secret&token`. */
  userInfoUrl?: string | null
  clientId: string
  clientSecret: string
  timeoutMs: number
  fetch?: typeof fetch
}

/** Whether `text` contains `value` as written or URL-encoded. */
function quotes(text: string, value: string): boolean {
  return value !== '' && (text.includes(value) || text.includes(encodeURIComponent(value)))
}

/**
 * UCL-API-style token endpoint: `GET tokenUrl?code&client_id&client_secret` answering
 * `{ ok, token, … }`. Failures come back as values with a reason fit for logs (no secrets).
 */
export function createUniversityClient(options: UniversityClientOptions): UniversityClient {
  const doFetch = options.fetch ?? fetch

  async function getJson(url: URL): Promise<{ status: number; body: Record<string, unknown> }> {
    const response = await doFetch(url, {
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(options.timeoutMs),
    })
    const body: unknown = JSON.parse(await response.text())
    if (typeof body !== 'object' || body === null) throw new TypeError('not a JSON object')
    return { status: response.status, body: body as Record<string, unknown> }
  }

  return {
    async exchangeCode(code, state) {
      const url = new URL(options.tokenUrl)
      url.searchParams.set('code', code)
      url.searchParams.set('client_id', options.clientId)
      url.searchParams.set('client_secret', options.clientSecret)
      let status: number
      let body: unknown
      try {
        const response = await doFetch(url, {
          headers: { accept: 'application/json' },
          signal: AbortSignal.timeout(options.timeoutMs),
        })
        status = response.status
        body = JSON.parse(await response.text())
      } catch (error) {
        const name = error instanceof Error ? error.name : 'Error'
        return { ok: false, reason: `token endpoint unreachable or not JSON (${name})` }
      }
      const parsed = body as { ok?: unknown; token?: unknown; error?: unknown; state?: unknown }
      if (typeof parsed.state === 'string' && parsed.state !== state) {
        return { ok: false, reason: 'the voucher was issued for another state' }
      }
      if (parsed.ok === true && typeof parsed.token === 'string' && parsed.token !== '') {
        return { ok: true, token: parsed.token }
      }
      // The provider's text goes to the logs. Our secret is cut out of it; text that quotes the
      // voucher is withheld whole: the voucher comes from the caller, and a caller-chosen value
      // must not pick which words of a log line are blanked.
      const said = typeof parsed.error === 'string' ? parsed.error.slice(0, 200) : null
      const error =
        said === null
          ? 'no token'
          : quotes(said, code)
            ? 'error text withheld: it quotes the voucher'
            : redact(said, [options.clientSecret])
      return { ok: false, reason: `token endpoint refused (HTTP ${status}: ${error})` }
    },

    async fetchUser(token) {
      if (options.userInfoUrl === undefined || options.userInfoUrl === null) return null
      const url = new URL(options.userInfoUrl)
      url.searchParams.set('client_secret', options.clientSecret)
      url.searchParams.set('token', token)
      let answer: { status: number; body: Record<string, unknown> }
      try {
        answer = await getJson(url)
      } catch (error) {
        const name = error instanceof Error ? error.name : 'Error'
        return { ok: false, reason: `user-data endpoint unreachable or not JSON (${name})` }
      }
      const data = answer.body
      const upi = text(data.upi)
      if (data.ok !== true || upi === undefined) {
        const error =
          typeof data.error === 'string'
            ? redact(data.error.slice(0, 200), [token, options.clientSecret])
            : 'no upi'
        return { ok: false, reason: `user-data endpoint refused (HTTP ${answer.status}: ${error})` }
      }
      const email = text(data.email)
      const name = text(data.full_name) ?? text(data.given_name)
      return {
        ok: true,
        identity: {
          issuer: url.origin,
          subject: upi,
          ...(email === undefined ? {} : { email }),
          ...(name === undefined ? {} : { name }),
          ...(typeof data.is_student === 'boolean' ? { isStudent: data.is_student } : {}),
        },
      }
    },
  }
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined
}
