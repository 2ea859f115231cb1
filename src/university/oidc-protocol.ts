import { MAX_SECRET_LENGTH } from '../lib/secrets.js'
import { attemptSecrets, type OidcClient } from './oidc-client.js'
import { describeProviderAnswer, userDeclined } from './oidc-failure.js'
import type { UniversityProtocol } from './protocol.js'

/**
 * UNIVERSITY_PROTOCOL=oidc (docs/university-providers.md): the authorization code flow with PKCE
 * and a nonce, both derived from the attempt's cookie. No `client_id` or `client_secret` rides on
 * the redirect back, so the cookie, `state` and the issuer (`iss`, RFC 9207) decide.
 */
export function createOidcProtocol(oidc: OidcClient): UniversityProtocol {
  return {
    id: 'oidc',

    authorizeUrl: ({ state, cookie }) => oidc.authorizationUrl(state, attemptSecrets(cookie)),

    async read({ params, attemptCookie }) {
      const { state } = params
      if (state === undefined || state === '' || state.length > MAX_SECRET_LENGTH) {
        return { kind: 'refuse', reason: 'state missing or malformed' }
      }
      if (attemptCookie === null || attemptCookie.length > MAX_SECRET_LENGTH) {
        return { kind: 'refuse', reason: 'no attempt cookie' }
      }
      const issuerRefused = await oidc.checkIssuer(params.iss)
      if (issuerRefused !== null) return { kind: 'refuse', reason: issuerRefused }
      const answered = params.error === undefined && params.code !== undefined && params.code !== ''
      return {
        kind: 'answer',
        state,
        cookie: attemptCookie,
        denial: answered
          ? null
          : {
              denied: userDeclined(params.error),
              reason: describeProviderAnswer(params.error, params.error_description),
            },
      }
    },

    async complete({ params }, { state, cookie }) {
      if (cookie === null) return { kind: 'failed', reason: 'no attempt cookie' }
      const outcome = await oidc.complete(
        { code: params.code, state, ...(params.iss === undefined ? {} : { iss: params.iss }) },
        { ...attemptSecrets(cookie), state },
      )
      if (outcome.kind !== 'linked') return outcome
      return { kind: 'linked', token: outcome.tokens.accessToken, identity: outcome.identity }
    },
  }
}
