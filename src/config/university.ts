import { PROVIDER_TIMEOUT_MS } from './constants.js'
import type { Config, UniversityProtocol } from './types.js'
import { type Env, fail, type Problems, read } from './problems.js'
import { httpUrl, ipList, list, optionalDuration, optionalOneOf, withDefaults } from './readers.js'

/** The identity provider as given: which protocol, and the endpoints the operator named. */
export interface UniversityProvider {
  readonly protocol: UniversityProtocol
  readonly issuer: string | undefined
  readonly tokenAuthMethod: Config['university']['tokenAuthMethod']
  readonly authorizeUrl: string | undefined
  readonly tokenUrl: string | undefined
  /** Whether the operator configured a provider, by any protocol (else the sandbox may run). */
  readonly configured: boolean
}

/** UNIVERSITY_PROTOCOL, UNIVERSITY_ISSUER, UNIVERSITY_TOKEN_AUTH_METHOD and the UCL-API endpoints. */
export function readUniversityProvider(env: Env, { guard, report }: Problems): UniversityProvider {
  const protocol = withDefaults(env, { guard }).oneOf(
    'UNIVERSITY_PROTOCOL',
    ['uclapi', 'oidc'] as const,
    'uclapi',
  )
  const issuer = guard(undefined, () => httpUrl(env, 'UNIVERSITY_ISSUER', undefined, 'endpoint'))
  if (issuer !== undefined && protocol !== 'oidc') {
    report('UNIVERSITY_ISSUER', 'is used only with UNIVERSITY_PROTOCOL=oidc')
  }
  const tokenAuthMethod = guard(null, () =>
    optionalOneOf(env, 'UNIVERSITY_TOKEN_AUTH_METHOD', [
      'client_secret_basic',
      'client_secret_post',
    ] as const),
  )
  if (tokenAuthMethod !== null && protocol !== 'oidc') {
    report('UNIVERSITY_TOKEN_AUTH_METHOD', 'is used only with UNIVERSITY_PROTOCOL=oidc')
  }
  const authorizeUrl = guard(undefined, () =>
    httpUrl(env, 'UNIVERSITY_AUTHORIZE_URL', undefined, 'endpoint'),
  )
  const tokenUrl = guard(undefined, () =>
    httpUrl(env, 'UNIVERSITY_TOKEN_URL', undefined, 'endpoint'),
  )
  if ((authorizeUrl === undefined) !== (tokenUrl === undefined)) {
    report(
      authorizeUrl === undefined ? 'UNIVERSITY_AUTHORIZE_URL' : 'UNIVERSITY_TOKEN_URL',
      'set both UNIVERSITY_AUTHORIZE_URL and UNIVERSITY_TOKEN_URL, or neither for the sandbox',
    )
  }
  const names =
    protocol === 'oidc'
      ? ['UNIVERSITY_ISSUER']
      : ['UNIVERSITY_AUTHORIZE_URL', 'UNIVERSITY_TOKEN_URL']
  const configured = names.some((name) => read(env, name) !== undefined)
  return { protocol, issuer, tokenAuthMethod, authorizeUrl, tokenUrl, configured }
}

/** The variable an operator sets to configure the provider of `protocol`. */
export function providerVariable(protocol: UniversityProtocol): string {
  return protocol === 'oidc' ? 'UNIVERSITY_ISSUER' : 'UNIVERSITY_AUTHORIZE_URL'
}

/**
 * The rest of the university section. Unset endpoints are the simulated provider's under
 * `sandboxBase`; credentials, the user-data endpoint and the issuer default only when `simulated`.
 */
export function readUniversity(
  env: Env,
  { guard, report }: Problems,
  provider: UniversityProvider,
  { simulated, sandboxBase }: { simulated: boolean; sandboxBase: string },
): Config['university'] {
  const { protocol } = provider
  const setting = withDefaults(env, { guard })
  const clientId = read(env, 'UNIVERSITY_CLIENT_ID') ?? (simulated ? 'sandbox-client' : undefined)
  const clientSecret =
    read(env, 'UNIVERSITY_CLIENT_SECRET') ?? (simulated ? 'sandbox-secret' : undefined)
  if (clientId === undefined)
    report('UNIVERSITY_CLIENT_ID', 'is required with a real identity provider')
  if (clientSecret === undefined) {
    report('UNIVERSITY_CLIENT_SECRET', 'is required with a real identity provider')
  }

  const bindingRaw = read(env, 'UNIVERSITY_CALLBACK_BINDING') ?? 'cookie'
  if (bindingRaw !== 'cookie' && bindingRaw !== 'none') {
    report('UNIVERSITY_CALLBACK_BINDING', 'must be "cookie" or "none"')
  }
  const callbackAllowedIps = guard([], () => ipList(env, 'UNIVERSITY_CALLBACK_ALLOWED_IPS'))
  if (bindingRaw === 'none' && callbackAllowedIps.length === 0) {
    report('UNIVERSITY_CALLBACK_ALLOWED_IPS', 'is required when UNIVERSITY_CALLBACK_BINDING=none')
  }
  if (bindingRaw === 'none' && protocol === 'oidc') {
    // The OIDC redirect passes through the browser, and PKCE needs the attempt's cookie.
    report('UNIVERSITY_CALLBACK_BINDING', 'must be "cookie" with UNIVERSITY_PROTOCOL=oidc')
  }
  const userInfoUrl = guard(undefined, () =>
    httpUrl(env, 'UNIVERSITY_USERINFO_URL', undefined, 'endpoint'),
  )
  return Object.freeze({
    authorizeUrl: provider.authorizeUrl ?? `${sandboxBase}/university/authorise`,
    tokenUrl: provider.tokenUrl ?? `${sandboxBase}/university/token`,
    clientId: clientId ?? '',
    clientSecret: clientSecret ?? '',
    attemptTtlMs: setting.duration('UNIVERSITY_ATTEMPT_TTL', '10m', '1d'),
    callbackBinding: bindingRaw === 'none' ? 'none' : 'cookie',
    callbackAllowedIps,
    timeoutMs: PROVIDER_TIMEOUT_MS,
    protocol,
    issuer: provider.issuer ?? (simulated && protocol === 'oidc' ? `${sandboxBase}/oidc` : null),
    scopes: read(env, 'UNIVERSITY_SCOPES') ?? 'openid email profile',
    tokenAuthMethod: provider.tokenAuthMethod,
    userInfoUrl: userInfoUrl ?? (simulated ? `${sandboxBase}/university/user/data` : null),
    identityBinding: setting.oneOf(
      'UNIVERSITY_IDENTITY_BINDING',
      ['exclusive', 'shared'] as const,
      'exclusive',
    ),
    emailDomains: guard(null, () => emailDomains(env)),
    linkMaxAgeMs: guard(null, () => optionalDuration(env, 'UNIVERSITY_LINK_MAX_AGE', '3650d')),
  })
}

// A domain name as an email address carries it: dot-separated labels of letters, digits and
// inner hyphens (an IDN in its xn-- form), each at most 63 characters, 253 in all.
const DOMAIN_NAME =
  /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/

/** UNIVERSITY_EMAIL_DOMAINS: domain names, lower-cased; a leading `@` or `.` is forgiven. */
function emailDomains(env: Env): string[] | null {
  const domains = list(env, 'UNIVERSITY_EMAIL_DOMAINS')?.map((domain) =>
    domain.toLowerCase().replace(/^[@.]+/, ''),
  )
  for (const domain of domains ?? []) {
    if (!DOMAIN_NAME.test(domain)) {
      fail(
        'UNIVERSITY_EMAIL_DOMAINS',
        `${JSON.stringify(domain.slice(0, 80))} is not a domain name (a comma list such as ucl.ac.uk,cs.example.edu)`,
      )
    }
  }
  return domains ?? null
}
