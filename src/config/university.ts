import { createPrivateKey, X509Certificate } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { isAbsolute } from 'node:path'
import { PROVIDER_TIMEOUT_MS } from './constants.js'
import type { CasConfig, Config, SamlConfig, UniversityProtocol } from './types.js'
import { type Env, fail, type Problems, read } from './problems.js'
import { httpUrl, ipList, list, optionalDuration, optionalOneOf, withDefaults } from './readers.js'
import { readAttributes } from './university-attributes.js'

/** The identity provider as given: which protocol, and the endpoints the operator named. */
export interface UniversityProvider {
  readonly protocol: UniversityProtocol
  readonly issuer: string | undefined
  readonly tokenAuthMethod: Config['university']['tokenAuthMethod']
  readonly authorizeUrl: string | undefined
  readonly tokenUrl: string | undefined
  /** CAS: UNIVERSITY_CAS_URL, without a trailing slash. */
  readonly casUrl: string | undefined
  /** SAML: UNIVERSITY_SAML_IDP_METADATA, a URL or a file's absolute path. */
  readonly samlIdpMetadata: string | undefined
  /** Whether the operator configured a provider, by any protocol (else the sandbox may run). */
  readonly configured: boolean
}

/** UNIVERSITY_PROTOCOL, UNIVERSITY_ISSUER, UNIVERSITY_TOKEN_AUTH_METHOD and the UCL-API endpoints. */
export function readUniversityProvider(env: Env, { guard, report }: Problems): UniversityProvider {
  const protocol = withDefaults(env, { guard }).oneOf(
    'UNIVERSITY_PROTOCOL',
    ['uclapi', 'oidc', 'cas', 'saml'] as const,
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
  if (
    (authorizeUrl !== undefined || tokenUrl !== undefined) &&
    (protocol === 'cas' || protocol === 'saml')
  ) {
    report(
      authorizeUrl === undefined ? 'UNIVERSITY_TOKEN_URL' : 'UNIVERSITY_AUTHORIZE_URL',
      'is used only with UNIVERSITY_PROTOCOL=uclapi',
    )
  }
  const casUrl = guard(undefined, () => httpUrl(env, 'UNIVERSITY_CAS_URL'))
  if (casUrl !== undefined && protocol !== 'cas') {
    report('UNIVERSITY_CAS_URL', 'is used only with UNIVERSITY_PROTOCOL=cas')
  }
  const samlIdpMetadata = guard(undefined, () => metadataSource(env))
  if (samlIdpMetadata !== undefined && protocol !== 'saml') {
    report('UNIVERSITY_SAML_IDP_METADATA', 'is used only with UNIVERSITY_PROTOCOL=saml')
  }
  const configured =
    read(env, providerVariable(protocol)) !== undefined ||
    (protocol === 'uclapi' && read(env, 'UNIVERSITY_TOKEN_URL') !== undefined)
  return {
    protocol,
    issuer,
    tokenAuthMethod,
    authorizeUrl,
    tokenUrl,
    casUrl,
    samlIdpMetadata,
    configured,
  }
}

/** The variable an operator sets to configure the provider of `protocol`. */
export function providerVariable(protocol: UniversityProtocol): string {
  switch (protocol) {
    case 'oidc':
      return 'UNIVERSITY_ISSUER'
    case 'cas':
      return 'UNIVERSITY_CAS_URL'
    case 'saml':
      return 'UNIVERSITY_SAML_IDP_METADATA'
    default:
      return 'UNIVERSITY_AUTHORIZE_URL'
  }
}

/** UNIVERSITY_SAML_IDP_METADATA: an http(s) URL, or the absolute path of a readable file. */
function metadataSource(env: Env): string | undefined {
  const raw = read(env, 'UNIVERSITY_SAML_IDP_METADATA')
  if (raw === undefined) return undefined
  if (/^https?:/i.test(raw))
    return httpUrl(env, 'UNIVERSITY_SAML_IDP_METADATA', undefined, 'endpoint')
  if (!isAbsolute(raw)) {
    fail('UNIVERSITY_SAML_IDP_METADATA', 'must be an http(s) URL or the absolute path of a file')
  }
  try {
    readFileSync(raw, { flag: 'r' }).subarray(0, 1)
  } catch (error) {
    fail(
      'UNIVERSITY_SAML_IDP_METADATA',
      `cannot read ${JSON.stringify(raw)} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    )
  }
  return raw
}

/** A PEM value given inline, or the absolute path of a file holding it. */
function pem(env: Env, name: string): string | undefined {
  const raw = read(env, name)
  if (raw === undefined) return undefined
  if (raw.startsWith('-----BEGIN')) return raw.replace(/\\n/g, '\n')
  if (!isAbsolute(raw)) fail(name, 'must be PEM text or the absolute path of a PEM file')
  try {
    return readFileSync(raw, 'utf8')
  } catch (error) {
    return fail(
      name,
      `cannot read ${JSON.stringify(raw)} (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
    )
  }
}

/** The SP's signing key and certificate: both or neither, each parsed, and a pair. */
function spKeyPair(
  env: Env,
  { guard, report }: Problems,
): { key: string | null; cert: string | null } {
  const key = guard(undefined, () => pem(env, 'UNIVERSITY_SAML_SP_KEY'))
  const cert = guard(undefined, () => pem(env, 'UNIVERSITY_SAML_SP_CERT'))
  if ((key === undefined) !== (cert === undefined)) {
    report(
      key === undefined ? 'UNIVERSITY_SAML_SP_KEY' : 'UNIVERSITY_SAML_SP_CERT',
      'set both UNIVERSITY_SAML_SP_KEY and UNIVERSITY_SAML_SP_CERT, or neither',
    )
    return { key: null, cert: null }
  }
  if (key === undefined || cert === undefined) return { key: null, cert: null }
  let privateKey
  try {
    privateKey = createPrivateKey(key)
  } catch {
    report('UNIVERSITY_SAML_SP_KEY', 'is not a PEM private key')
    return { key: null, cert: null }
  }
  let certificate
  try {
    certificate = new X509Certificate(cert)
  } catch {
    report('UNIVERSITY_SAML_SP_CERT', 'is not a PEM certificate')
    return { key: null, cert: null }
  }
  if (privateKey.asymmetricKeyType !== 'rsa') {
    report('UNIVERSITY_SAML_SP_KEY', 'must be an RSA key (signatures are RSA-SHA256)')
  } else if (!certificate.checkPrivateKey(privateKey)) {
    report('UNIVERSITY_SAML_SP_CERT', 'is not the certificate of UNIVERSITY_SAML_SP_KEY')
  }
  return { key, cert }
}

/** The CAS and SAML sections; null for the protocols that do not use them. */
function readCasAndSaml(
  env: Env,
  problems: Problems,
  provider: UniversityProvider,
  { sandboxBase, publicBaseUrl }: { sandboxBase: string; publicBaseUrl: string },
): { cas: CasConfig | null; saml: SamlConfig | null } {
  const { guard, report } = problems
  const { protocol } = provider
  const version = guard(3 as const, () => {
    const raw = read(env, 'UNIVERSITY_CAS_VERSION')
    if (raw === undefined) return 3 as const
    if (raw !== '2' && raw !== '3') fail('UNIVERSITY_CAS_VERSION', 'must be "2" or "3"')
    return raw === '2' ? (2 as const) : (3 as const)
  })
  if (read(env, 'UNIVERSITY_CAS_VERSION') !== undefined && protocol !== 'cas') {
    report('UNIVERSITY_CAS_VERSION', 'is used only with UNIVERSITY_PROTOCOL=cas')
  }
  const spEntityId = read(env, 'UNIVERSITY_SAML_SP_ENTITY_ID')
  const samlOnly = [
    'UNIVERSITY_SAML_SP_ENTITY_ID',
    'UNIVERSITY_SAML_SP_KEY',
    'UNIVERSITY_SAML_SP_CERT',
  ]
  if (protocol !== 'saml') {
    for (const name of samlOnly) {
      if (read(env, name) !== undefined) report(name, 'is used only with UNIVERSITY_PROTOCOL=saml')
    }
  }
  if (spEntityId !== undefined && (spEntityId.length > 1024 || /\s/.test(spEntityId))) {
    report('UNIVERSITY_SAML_SP_ENTITY_ID', 'must be a URI without spaces, at most 1024 characters')
  }
  const cas: CasConfig | null =
    protocol === 'cas'
      ? Object.freeze({
          url: (provider.casUrl ?? `${sandboxBase}/cas`).replace(/\/+$/, ''),
          version,
        })
      : null
  let saml: SamlConfig | null = null
  if (protocol === 'saml') {
    const { key, cert } = spKeyPair(env, problems)
    saml = Object.freeze({
      idpMetadata: provider.samlIdpMetadata ?? `${sandboxBase}/saml/metadata`,
      spEntityId: spEntityId ?? `${publicBaseUrl}/authorize/university/saml`,
      spKey: key,
      spCert: cert,
    })
  }
  return { cas, saml }
}

/**
 * The rest of the university section. Unset endpoints are the simulated provider's under
 * `sandboxBase`; credentials, the user-data endpoint and the issuer default only when `simulated`.
 */
export function readUniversity(
  env: Env,
  { guard, report }: Problems,
  provider: UniversityProvider,
  {
    simulated,
    sandboxBase,
    publicBaseUrl,
  }: { simulated: boolean; sandboxBase: string; publicBaseUrl: string },
): Config['university'] {
  const { protocol } = provider
  const setting = withDefaults(env, { guard })
  // CAS and SAML have no client credentials: the seed's `client_id` on the 301 is campusgate's name.
  const credentialsFree = protocol === 'cas' || protocol === 'saml'
  const clientId =
    read(env, 'UNIVERSITY_CLIENT_ID') ??
    (simulated ? 'sandbox-client' : credentialsFree ? 'campusgate' : undefined)
  const clientSecret =
    read(env, 'UNIVERSITY_CLIENT_SECRET') ??
    (simulated ? 'sandbox-secret' : credentialsFree ? '' : undefined)
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
  if (bindingRaw === 'none' && protocol !== 'uclapi') {
    // The OIDC, CAS and SAML answers pass through the browser, and only its cookie binds them.
    report('UNIVERSITY_CALLBACK_BINDING', `must be "cookie" with UNIVERSITY_PROTOCOL=${protocol}`)
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
    ...readCasAndSaml(env, { guard, report, done: () => undefined }, provider, {
      sandboxBase,
      publicBaseUrl,
    }),
    attributes: guard(null, () => readAttributes(env, protocol)),
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
