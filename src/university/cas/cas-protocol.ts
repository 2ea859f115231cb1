import type { UniversityAttributes } from '../../config.js'
import { redact } from '../../lib/redact.js'
import { MAX_SECRET_LENGTH } from '../../lib/secrets.js'
import { identityFrom } from '../attributes.js'
import type {
  AttemptStart,
  CallbackReading,
  CallbackRequest,
  Completion,
  UniversityProtocol,
} from '../protocol.js'
import { fetchText, ProviderFetchError } from '../provider-fetch.js'
import { readValidationAnswer } from './validation.js'

/** The path of the callback; the service URL is this under PUBLIC_BASE_URL, with the state. */
export const CALLBACK_PATH = '/authorize/university/callback'
/** A validation answer is a few hundred bytes; a server that sends more is refused. */
const MAX_ANSWER_BYTES = 64 * 1024
// CAS 3.0 §3.7: a ticket is at most 256 characters of letters, digits and `-` (servers add `.`,
// `_` and `~` around a host name); anything else is refused before it reaches the server.
const TICKET = /^[A-Za-z0-9._~-]{1,256}$/

export interface CasProtocolOptions {
  /** UNIVERSITY_CAS_URL without a trailing slash. */
  casUrl: string
  /** UNIVERSITY_CAS_VERSION: 3 validates at `/p3/serviceValidate`, 2 at `/serviceValidate`. */
  version: 2 | 3
  publicBaseUrl: string
  /** The seed's `client_id`, carried on the 301. */
  clientId: string
  attributes: UniversityAttributes
  timeoutMs: number
  fetch?: typeof fetch
}

/**
 * docs/university-providers.md, "CAS": the `service` of a user's round trip. The login and the
 * validation send exactly this string, so the server can tie the ticket to it; the state in it
 * is the openId, so a ticket issued for one user does not validate for another.
 */
export function serviceUrl(publicBaseUrl: string, state: string): string {
  return `${publicBaseUrl}${CALLBACK_PATH}?state=${encodeURIComponent(state)}`
}

/**
 * CAS 2 and 3 (Apereo CAS, LemonLDAP::NG, and the 统一身份认证 of many universities): the 301 to
 * `/login` with the service, and the ticket validated server to server. A ticket is validated at
 * most once by campusgate: `complete` runs only for the attempt the callback claimed
 * (redirected → exchanging), and the server itself refuses a ticket's second validation.
 */
export function createCasProtocol(options: CasProtocolOptions): UniversityProtocol {
  const validatePath = options.version === 3 ? '/p3/serviceValidate' : '/serviceValidate'

  function failed(reason: string, ticket: string): Completion {
    return { kind: 'failed', reason: redact(reason, [ticket]) }
  }

  return {
    id: 'cas',

    async authorizeUrl(attempt: AttemptStart): Promise<string> {
      const url = new URL(`${options.casUrl}/login`)
      // The seed's two parameters first, as on every protocol's 301; then CAS's own.
      url.searchParams.set('client_id', options.clientId)
      url.searchParams.set('state', attempt.state)
      url.searchParams.set('service', serviceUrl(options.publicBaseUrl, attempt.state))
      return url.toString()
    },

    async read(request: CallbackRequest): Promise<CallbackReading> {
      if (request.method !== 'GET') return { kind: 'refuse', reason: 'a CAS callback is a GET' }
      const { state, ticket } = request.params
      if (state === undefined || state === '' || state.length > MAX_SECRET_LENGTH) {
        return { kind: 'refuse', reason: 'state missing or malformed' }
      }
      // The server sends the browser back with a top-level GET, which brings the attempt's
      // SameSite=Lax cookie: as for OpenID Connect, the cookie binds the ticket to that browser.
      const cookie = request.attemptCookie
      if (cookie === null || cookie.length > MAX_SECRET_LENGTH) {
        return { kind: 'refuse', reason: 'no attempt cookie' }
      }
      // No ticket: the user came back without signing in (CAS has no "deny" answer).
      if (ticket === undefined || ticket === '') {
        return { kind: 'answer', state, cookie, denial: { denied: true, reason: 'no ticket' } }
      }
      if (!TICKET.test(ticket)) return { kind: 'refuse', reason: 'ticket malformed' }
      return { kind: 'answer', state, cookie, denial: null }
    },

    async complete(
      request: CallbackRequest,
      attempt: { state: string; cookie: string | null },
    ): Promise<Completion> {
      const ticket = request.params.ticket ?? ''
      if (!TICKET.test(ticket)) return { kind: 'failed', reason: 'ticket malformed' }
      const url = new URL(`${options.casUrl}${validatePath}`)
      // The service of the attempt, never one rebuilt from the request.
      url.searchParams.set('service', serviceUrl(options.publicBaseUrl, attempt.state))
      url.searchParams.set('ticket', ticket)
      let answer
      try {
        answer = await fetchText(url.toString(), {
          timeoutMs: options.timeoutMs,
          maxBytes: MAX_ANSWER_BYTES,
          accept: 'application/xml, text/xml',
          ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
        })
      } catch (error) {
        if (error instanceof ProviderFetchError) {
          return failed(`ticket validation failed: ${error.message}`, ticket)
        }
        throw error
      }
      if (answer.status !== 200) {
        return failed(`ticket validation failed: HTTP ${answer.status}`, ticket)
      }
      const read = readValidationAnswer(answer.text, ticket)
      if (read.kind === 'failure') return failed(`ticket validation failed: ${read.reason}`, ticket)
      const mapped = identityFrom(options.casUrl, read.attributes, options.attributes)
      if (mapped.identity === null) {
        return failed(`ticket validation failed: ${mapped.missing ?? 'no subject'}`, ticket)
      }
      return { kind: 'linked', token: null, identity: mapped.identity }
    },
  }
}
