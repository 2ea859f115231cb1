import proxyAddr from '@fastify/proxy-addr'
import type { CallbackBinding } from '../config.js'
import { MAX_SECRET_LENGTH, secretsEqual } from '../lib/secrets.js'
import type { UniversityClient } from './client.js'
import type { UniversityProtocol } from './protocol.js'

/**
 * The seed's round trip (UNIVERSITY_PROTOCOL=uclapi, docs/university-providers.md): the browser
 * goes to `{provider_authorize_url}?client_id=<id>&state=<openId>`, and the provider calls back
 * with `client_id`, `client_secret`, `state` and a `code` exchanged server to server for a token;
 * the user-data endpoint, when configured, names the member.
 */
export interface UclApiProtocolOptions {
  client: UniversityClient
  authorizeUrl: string
  clientId: string
  clientSecret: string
  callbackBinding: CallbackBinding
  callbackAllowedIps: readonly string[]
}

/**
 * The seed's `{provider_authorize_url}?client_id=<client_id>&state=<open_id>`, built by appending
 * to the configured URL as written (a URL parser would normalize it, adding a `/` to a bare host).
 */
export function authorizeLocation(authorizeUrl: string, clientId: string, openId: string): string {
  const separator = authorizeUrl.includes('?') ? '&' : '?'
  return `${authorizeUrl}${separator}client_id=${encodeURIComponent(clientId)}&state=${encodeURIComponent(openId)}`
}

export function createUclApiProtocol(options: UclApiProtocolOptions): UniversityProtocol {
  const callerAllowed = proxyAddr.compile([...options.callbackAllowedIps])
  return {
    id: 'uclapi',

    authorizeUrl: async ({ state }) =>
      authorizeLocation(options.authorizeUrl, options.clientId, state),

    async read({ params, attemptCookie, ip }) {
      const { client_id: clientId, client_secret: clientSecret, state, code } = params
      if (clientId === undefined || !secretsEqual(clientId, options.clientId)) {
        return { kind: 'refuse', reason: 'client_id does not match' }
      }
      if (clientSecret !== undefined && !secretsEqual(clientSecret, options.clientSecret)) {
        return { kind: 'refuse', reason: 'client_secret does not match' }
      }
      if (state === undefined || state === '' || state.length > MAX_SECRET_LENGTH) {
        return { kind: 'refuse', reason: 'state missing or malformed' }
      }
      const denial = params.result === 'denied' || code === undefined || code === ''
      if (options.callbackBinding === 'none') {
        // Without the cookie, only the provider's own secret tells its call from a forged one that
        // carries a code obtained elsewhere; a denial links nothing, so it may come without it.
        if (!denial && clientSecret === undefined) {
          return {
            kind: 'refuse',
            reason: 'client_secret required with UNIVERSITY_CALLBACK_BINDING=none',
          }
        }
        if (!callerAllowed(ip, 0)) {
          return { kind: 'refuse', reason: 'caller not in UNIVERSITY_CALLBACK_ALLOWED_IPS' }
        }
        return { kind: 'answer', state, cookie: null, denial: denial ? { denied: true } : null }
      }
      if (attemptCookie === null || attemptCookie.length > MAX_SECRET_LENGTH) {
        return { kind: 'refuse', reason: 'no attempt cookie' }
      }
      return {
        kind: 'answer',
        state,
        cookie: attemptCookie,
        denial: denial ? { denied: true } : null,
      }
    },

    async complete({ params }, { state }) {
      const exchange = await options.client.exchangeCode(params.code ?? '', state)
      if (!exchange.ok) return { kind: 'failed', reason: exchange.reason }
      // UNIVERSITY_USERINFO_URL names the member; without it the link records no identity.
      const user = await options.client.fetchUser(exchange.token)
      if (user !== null && !user.ok) return { kind: 'failed', reason: user.reason }
      return { kind: 'linked', token: exchange.token, identity: user?.identity ?? null }
    },
  }
}
