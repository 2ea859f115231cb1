import type { AccountChanges } from '../accounts/changes.js'
import type { Audit } from '../audit/audit.js'
import { timedFetch, type Metrics } from '../operations/metrics.js'
import { createUniversityClient } from '../university/client.js'
import { createOidcIssuer, type OidcClient } from '../university/oidc-client.js'
import { createProtocol } from '../university/protocols.js'
import { createUniversity, type University } from '../university/service.js'
import type { ServicesDeps } from './deps.js'

/** Tier 2's round trip over the protocol UNIVERSITY_PROTOCOL names, and the console's sign-in. */
export interface UniversityParts {
  university: University
  /** The console's university sign-in (OIDC with CONSOLE_OPERATORS); null: links only. */
  consoleOidc: OidcClient | null
}

export function composeUniversity(
  deps: ServicesDeps,
  { metrics, audit, changes }: { metrics: Metrics; audit: Audit; changes: AccountChanges },
): UniversityParts {
  const { config, db, clock, cipher, log } = deps
  const publicBaseUrl = config.server.publicBaseUrl
  const outbound = timedFetch(deps.fetch ?? fetch, 'university', metrics)
  // The university's OpenID Connect issuer, discovered once for tier 2 and the console's sign-in.
  const oidcIssuer =
    config.university.protocol === 'oidc' && config.university.issuer !== null
      ? createOidcIssuer({
          ...config.university,
          issuer: config.university.issuer,
          // An http: issuer (a development provider, the sandbox) never in production.
          allowInsecureRequests: config.university.issuer.startsWith('http:'),
          clock,
          fetch: outbound,
        })
      : null
  const university = createUniversity({
    db: db.kysely,
    clock,
    protocol: createProtocol({
      config: config.university,
      publicBaseUrl,
      client: createUniversityClient({ ...config.university, fetch: outbound }),
      oidc: oidcIssuer?.client(`${publicBaseUrl}/authorize/university/callback`) ?? null,
      db: db.kysely,
      clock,
      fetch: outbound,
    }),
    mailLimits: config.mail.limits,
    cipher,
    log: log.child({ component: 'university' }),
    audit,
    logLinks: config.mail.smtpUrl === null,
    publicBaseUrl,
    attemptTtlMs: config.university.attemptTtlMs,
    identityBinding: config.university.identityBinding,
    emailDomains: config.university.emailDomains,
    linkMaxAgeMs: config.university.linkMaxAgeMs,
    registrationCodeTtlMs: config.sessions.registrationCodeTtlMs,
    changes,
  })
  // A separate relying party for the console (its own redirect URI, state, nonce and PKCE) on the
  // same discovery.
  const consoleOidc =
    oidcIssuer !== null && config.console.enabled && config.console.operators.length > 0
      ? oidcIssuer.client(`${publicBaseUrl}/console/sign-in/university/callback`)
      : null
  return { university, consoleOidc }
}
