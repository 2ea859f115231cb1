import { isIP } from 'node:net'
import { dirname, join } from 'node:path'
import { isLoopbackHost } from './lib/loopback.js'

/** Which simulated providers the server mounts under `/_sandbox/`. */
export interface SandboxConfig {
  readonly messenger: boolean
  readonly university: boolean
}

export type CallbackBinding = 'cookie' | 'none'
export type UniversityProtocol = 'uclapi' | 'oidc'
export type IdentityBinding = 'exclusive' | 'shared'
export type TokenAuthMethod = 'client_secret_basic' | 'client_secret_post'

/** docs/decisions.md, "Rate limits": a maximum of 0 turns that limit off. */
export interface RateLimitConfig {
  /** Requests per window per client address (IPv6: per /64), across all routes. */
  readonly globalMax: number
  /** Requests per window per client address on registration and callback routes. */
  readonly sensitiveMax: number
  /** Requests per window per valid session key; such requests do not count against the address. */
  readonly perSessionMax: number
  readonly windowMs: number
}

export interface Config {
  readonly port: number
  readonly host: string
  readonly publicBaseUrl: string
  readonly databaseUrl: string
  readonly databasePoolSize: number
  readonly redisUrl: string | null
  readonly smtpUrl: string | null
  readonly outboxDir: string
  readonly mailFrom: string
  readonly messenger: {
    readonly apiBaseUrl: string
    readonly allowedAppIds: readonly string[] | null
    /** MESSENGER_APP_SECRETS: appId → its AppSecret, kept on the server (never printed). */
    readonly appSecrets: ReadonlyMap<string, string>
    readonly timeoutMs: number
  }
  readonly university: {
    readonly authorizeUrl: string
    readonly tokenUrl: string
    readonly clientId: string
    readonly clientSecret: string
    readonly attemptTtlMs: number
    readonly callbackBinding: CallbackBinding
    readonly callbackAllowedIps: readonly string[]
    readonly timeoutMs: number
    readonly protocol: UniversityProtocol
    /** OIDC: the issuer to discover (the sandbox's own in OIDC sandbox mode). */
    readonly issuer: string | null
    readonly scopes: string
    /** OIDC: how the client authenticates at the token endpoint; null: chosen from discovery. */
    readonly tokenAuthMethod: TokenAuthMethod | null
    /** UCL-API: the user-data endpoint that names who signed in; without it no identity is recorded. */
    readonly userInfoUrl: string | null
    readonly identityBinding: IdentityBinding
    /** Lower-case domains a confirmation email may go to (subdomains match); null: any. */
    readonly emailDomains: readonly string[] | null
    /** A link older than this lapses to tier 1; null: never. */
    readonly linkMaxAgeMs: number | null
  }
  /** Confirmation emails per hour: per user and per recipient address (across users). */
  readonly mailLimits: {
    readonly perUser: number
    readonly perRecipient: number
    readonly windowMs: number
  }
  readonly sandbox: SandboxConfig
  readonly sessionTtlMs: number
  readonly sessionTouchIntervalMs: number
  /** SESSION_MAX_AGE: a session ends this long after its registration however it is used; null: never. */
  readonly sessionMaxAgeMs: number | null
  readonly registrationCodeTtlMs: number
  /** `false`, a hop count, or the proxies' addresses / CIDRs; never "trust everyone". */
  readonly trustProxy: false | number | string[]
  readonly logLevel: string
  /** DATA_ENCRYPTION_KEY: the first encrypts, all decrypt; `null` to use `dataEncryptionKeyFile`. */
  readonly dataEncryptionKeys: readonly Buffer[] | null
  /** Where a development key is kept (created on first start) when DATA_ENCRYPTION_KEY is unset. */
  readonly dataEncryptionKeyFile: string
  readonly rateLimit: RateLimitConfig
  /** How long a request (headers and body) may take to arrive: `REQUEST_TIMEOUT`. */
  readonly requestTimeoutMs: number
  /** Bearer token /metrics requires; open when null. */
  readonly metricsToken: string | null
  /** How long audit events are kept (AUDIT_RETENTION). */
  readonly auditRetentionMs: number
  readonly webhook: WebhookConfig
  /** The service's own SQLite backups (BACKUP_DIR, BACKUP_INTERVAL, BACKUP_KEEP); null: off. */
  readonly backups: BackupConfig | null
  /** The operator console: CONSOLE (`off` disables it) and CONSOLE_OPERATORS (subjects or emails). */
  readonly console: { readonly enabled: boolean; readonly operators: readonly string[] }
}

export interface BackupConfig {
  readonly dir: string
  readonly intervalMs: number
  /** How many finished copies are kept, newest first. */
  readonly keep: number
}

/** Lifecycle events (SPEC.md, "Lifecycle events (webhooks)"). */
export interface WebhookConfig {
  /** WEBHOOK_URL: every endpoint gets every event; empty: webhooks off. */
  readonly endpoints: readonly string[]
  /** WEBHOOK_SECRET: `whsec_<base64>` each; every one signs every try. */
  readonly secrets: readonly string[]
  /** WEBHOOK_RETRY_FOR: how long failed tries are made again before the event is dead. */
  readonly retryForMs: number
  /** A try not answered 2xx within this is abandoned (SPEC: 10 s; tests shorten it). */
  readonly tryTimeoutMs: number
  /** How often the worker looks for due tries unwoken (a change wakes it at once). */
  readonly pollIntervalMs: number
}

/**
 * Thrown for a bad environment: one line per bad variable, each naming it, all of them at once
 * (an operator fixes a deployment in one restart, not one a variable).
 */
export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(problems.join('\n'))
  }
}

/** One variable's problem, as a reader finds it; `loadConfig` collects them. */
class VariableError extends Error {}

const WECHAT_API_BASE_URL = 'https://api.weixin.qq.com'
const DEFAULT_DATABASE_URL = 'sqlite:./data/campusgate.db'
const DAY_MS = 86_400_000
const DURATION_UNITS_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const
// Far above any sensible limit, far below where a counter loses precision.
const MAX_RATE_LIMIT = 1_000_000_000
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

/** Parses durations such as `30d`, `30m`, `2s` or `500ms` into milliseconds. */
export function parseDuration(value: string): number | null {
  const match = /^(\d{1,9})(ms|s|m|h|d)$/.exec(value.trim())
  if (!match) return null
  const ms = Number(match[1]) * DURATION_UNITS_MS[match[2] as keyof typeof DURATION_UNITS_MS]
  return ms > 0 ? ms : null
}

type Env = Readonly<Record<string, string | undefined>>

function read(env: Env, name: string): string | undefined {
  const value = env[name]?.trim()
  return value === undefined || value === '' ? undefined : value
}

function fail(name: string, why: string): never {
  throw new VariableError(`${name}: ${why}`)
}

/** What is wrong with the environment, one line per variable (the first problem of each). */
interface Problems {
  /** A rule across variables: records the problem of `name` and goes on. */
  report: (name: string, why: string) => void
  /** Runs a reader; a problem it throws is recorded and `fallback` stands in, so reading goes on. */
  guard: <T>(fallback: T, read: () => T) => T
  /** Throws every problem recorded, if any. */
  done: () => void
}

function collectProblems(): Problems {
  const lines: string[] = []
  const named = new Set<string>()
  const add = (line: string) => {
    const name = line.slice(0, line.indexOf(':'))
    if (named.has(name)) return
    named.add(name)
    lines.push(line)
  }
  return {
    report: (name, why) => add(`${name}: ${why}`),
    guard: (fallback, read) => {
      try {
        return read()
      } catch (error) {
        if (!(error instanceof VariableError)) throw error
        add(error.message)
        return fallback
      }
    },
    done: () => {
      if (lines.length > 0) throw new ConfigError(lines)
    },
  }
}

/** A duration of at most `max` (also a duration): no value overflows a date or a counter. */
function duration(env: Env, name: string, fallback: string, max: string): number {
  const raw = read(env, name) ?? fallback
  const ms =
    parseDuration(raw) ?? fail(name, `"${raw}" is not a duration like 30d, 30m, 2s or 500ms`)
  if (ms > parseDuration(max)!) fail(name, `"${raw}" is longer than the ${max} allowed`)
  return ms
}

/** An http(s) URL; base URLs lose trailing slashes, provider endpoints are kept exactly. */
function httpUrl(
  env: Env,
  name: string,
  fallback?: string,
  kind: 'base' | 'endpoint' = 'base',
): string | undefined {
  const raw = read(env, name) ?? fallback
  if (raw === undefined) return undefined
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return fail(name, `"${raw}" is not a URL`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') fail(name, 'must be an http(s) URL')
  return kind === 'base' ? raw.replace(/\/+$/, '') : raw
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = read(env, name)
  if (raw === undefined) return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < min || value > max) {
    fail(name, `"${raw}" is not a whole number from ${min} to ${max}`)
  }
  return value
}

function oneOf<T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const raw = read(env, name) ?? fallback
  if (!(values as readonly string[]).includes(raw)) {
    fail(name, `must be ${values.map((value) => `"${value}"`).join(' or ')}`)
  }
  return raw as T
}

function optionalOneOf<T extends string>(env: Env, name: string, values: readonly T[]): T | null {
  return read(env, name) === undefined ? null : oneOf(env, name, values, values[0])
}

function list(env: Env, name: string): string[] | null {
  const raw = read(env, name)
  if (raw === undefined) return null
  return raw
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '')
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

function ipList(env: Env, name: string): string[] {
  const items = list(env, name) ?? []
  for (const item of items) {
    const [address, bits, ...rest] = item.split('/')
    const family = isIP(address ?? '')
    const bitsOk =
      bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (family === 6 ? 128 : 32))
    if (family === 0 || !bitsOk || rest.length > 0)
      fail(name, `"${item}" is not an IP address or CIDR`)
  }
  return items
}

/**
 * `true` would take the client's own `X-Forwarded-For` as its address, so anyone could pick the
 * address that rate limits and UNIVERSITY_CALLBACK_ALLOWED_IPS see; so it is refused. A hop count
 * trusts that many proxies, counted from the right of the header.
 */
function trustProxy(env: Env): false | number | string[] {
  const raw = read(env, 'TRUST_PROXY')
  if (raw === undefined || raw === 'false') return false
  if (raw === 'true') {
    fail(
      'TRUST_PROXY',
      '"true" would let any client choose its own address through X-Forwarded-For; give the number of proxies in front (e.g. 1) or their addresses / CIDRs',
    )
  }
  if (/^\d+$/.test(raw)) return integer(env, 'TRUST_PROXY', 0, 0, 16) || false
  return ipList(env, 'TRUST_PROXY')
}

// SMTP_URL query parameters through which nodemailer would weaken or skip TLS.
const SMTP_TLS_PARAMETER = /^(ignoretls|requiretls|opportunistictls|secure|tls(\..*)?)$/i

/**
 * SMTP_URL: a relay off this machine gets TLS (smtps://, or STARTTLS which the transport then
 * requires) with a verified certificate, so no URL parameter may turn that off.
 */
function smtpUrl(env: Env, production: boolean): string | null {
  const raw = read(env, 'SMTP_URL')
  if (raw === undefined) {
    if (production) {
      fail(
        'SMTP_URL',
        'is required when NODE_ENV=production (without it, confirmation links are written to files and the log)',
      )
    }
    return null
  }
  // Messages never repeat the URL: it may carry the relay's password.
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return fail('SMTP_URL', 'must be smtp://host:port or smtps://…')
  }
  if ((url.protocol !== 'smtp:' && url.protocol !== 'smtps:') || url.hostname === '') {
    fail('SMTP_URL', 'must be smtp://host:port or smtps://…')
  }
  if (!isLoopbackHost(url.hostname)) {
    for (const key of url.searchParams.keys()) {
      if (SMTP_TLS_PARAMETER.test(key)) {
        fail(
          'SMTP_URL',
          `the "${key}" parameter is refused: mail to a remote relay always uses TLS`,
        )
      }
    }
  }
  return raw
}

/** `DATA_ENCRYPTION_KEY`: base64 of exactly 32 bytes each, comma-separated for rotation. */
function encryptionKeys(env: Env): Buffer[] | null {
  const items = list(env, 'DATA_ENCRYPTION_KEY')
  if (items === null) return null
  if (items.length === 0) fail('DATA_ENCRYPTION_KEY', 'names no key')
  // Messages never repeat a key.
  return items.map((item, index) => {
    const key = /^([A-Za-z0-9+/]{43}=|[A-Za-z0-9_-]{43})$/.test(item)
      ? Buffer.from(item, item.endsWith('=') ? 'base64' : 'base64url')
      : null
    if (key === null || key.length !== 32) {
      fail(
        'DATA_ENCRYPTION_KEY',
        `key ${index + 1} is not base64 of 32 bytes (make one with: openssl rand -base64 32)`,
      )
    }
    return key
  })
}

/**
 * MESSENGER_APP_SECRETS: `appId:secret` items, comma-separated. An AppSecret is base62 and an appId
 * holds no colon, so the first colon splits them. Messages never repeat a secret.
 */
function appSecrets(env: Env): Map<string, string> {
  const held = new Map<string, string>()
  for (const [index, item] of (list(env, 'MESSENGER_APP_SECRETS') ?? []).entries()) {
    const colon = item.indexOf(':')
    const appId = colon < 0 ? '' : item.slice(0, colon).trim()
    const secret = colon < 0 ? '' : item.slice(colon + 1).trim()
    if (appId === '' || secret === '' || appId.length > 512 || secret.length > 512) {
      fail('MESSENGER_APP_SECRETS', `item ${index + 1} is not appId:secret`)
    }
    if (held.has(appId)) fail('MESSENGER_APP_SECRETS', `names ${JSON.stringify(appId)} twice`)
    held.set(appId, secret)
  }
  return held
}

/**
 * Whether the operator configured a university identity provider, by any protocol. The sandbox
 * runs only when neither this nor the messenger platform is configured.
 */
function universityProviderConfigured(env: Env, protocol: UniversityProtocol): boolean {
  const names =
    protocol === 'oidc'
      ? ['UNIVERSITY_ISSUER']
      : ['UNIVERSITY_AUTHORIZE_URL', 'UNIVERSITY_TOKEN_URL']
  return names.some((name) => read(env, name) !== undefined)
}

function redisUrl(env: Env): string | null {
  const raw = read(env, 'REDIS_URL')
  if (raw === undefined) return null
  return /^rediss?:\/\/.+/.test(raw)
    ? raw
    : fail('REDIS_URL', 'must be redis://host:port or rediss://…')
}

/** Beside the SQLite file; for PostgreSQL in ./data, shared by the instances of one checkout. */
function keyFileFor(databaseUrl: string): string {
  const path = databaseUrl.startsWith('sqlite:') ? databaseUrl.slice('sqlite:'.length) : ''
  if (path === '' || path === ':memory:') return './data/campusgate.key'
  return join(dirname(path.replace(/^\/\/(?=\/)/, '')), 'campusgate.key')
}

function databaseUrl(env: Env): string {
  const raw = read(env, 'DATABASE_URL') ?? DEFAULT_DATABASE_URL
  if (/^sqlite:.+/.test(raw) || /^postgres(ql)?:\/\/.+/.test(raw)) return raw
  return fail('DATABASE_URL', 'must be sqlite:PATH or postgres://…')
}

/** A guessable token would open the metrics to anyone; a long one is no credential of ours. */
function metricsToken(env: Env): string | null {
  const raw = read(env, 'METRICS_TOKEN')
  if (raw === undefined) return null
  if (raw.length < 16 || raw.length > 256) fail('METRICS_TOKEN', 'must be 16 to 256 characters')
  return raw
}

/**
 * BACKUP_DIR and BACKUP_INTERVAL together turn the service's own backups on; one without the other
 * is a mistake, not "off". They are SQLite's: PostgreSQL is backed up with its own tools
 * (docs/operations.md), so asking the service to do it there stops start-up.
 */
function backups(env: Env, databaseUrlValue: string): BackupConfig | null {
  const dir = read(env, 'BACKUP_DIR')
  const interval = read(env, 'BACKUP_INTERVAL')
  const keep = integer(env, 'BACKUP_KEEP', 7, 1, 10_000)
  if (dir === undefined && interval === undefined) return null
  if (dir === undefined) fail('BACKUP_DIR', 'is required when BACKUP_INTERVAL is set')
  if (interval === undefined) fail('BACKUP_INTERVAL', 'is required when BACKUP_DIR is set')
  if (!databaseUrlValue.startsWith('sqlite:')) {
    fail(
      'BACKUP_DIR',
      'the service backs up SQLite only; back up PostgreSQL with pg_dump or base backups (docs/operations.md)',
    )
  }
  if (databaseUrlValue === 'sqlite::memory:')
    fail('BACKUP_DIR', 'an in-memory database has no file to back up')
  const intervalMs = duration(env, 'BACKUP_INTERVAL', interval, '30d')
  if (intervalMs < 60_000) fail('BACKUP_INTERVAL', `"${interval}" is shorter than the 1m allowed`)
  return Object.freeze({ dir, intervalMs, keep })
}

/**
 * Reads the whole configuration from the environment. `main.ts` is the only caller that passes
 * `process.env`; tests pass plain objects.
 */
export function loadConfig(env: Env): Config {
  const { report, guard, done } = collectProblems()
  const port = guard(3000, () => integer(env, 'PORT', 3000, 0, 65535))
  const host = read(env, 'HOST') ?? '127.0.0.1'
  const production = read(env, 'NODE_ENV') === 'production'

  const linkHost = host === '0.0.0.0' || host === '::' ? 'localhost' : host
  const hostInUrl = linkHost.includes(':') ? `[${linkHost}]` : linkHost
  const defaultBaseUrl = `http://${hostInUrl}:${port}`
  const publicBaseUrl = guard(defaultBaseUrl, () =>
    httpUrl(env, 'PUBLIC_BASE_URL', defaultBaseUrl)!,
  )

  const messengerBase = guard(undefined, () => httpUrl(env, 'MESSENGER_API_BASE_URL'))
  const protocol = guard('uclapi', () =>
    oneOf(env, 'UNIVERSITY_PROTOCOL', ['uclapi', 'oidc'] as const, 'uclapi'),
  )
  const issuer = guard(undefined, () => httpUrl(env, 'UNIVERSITY_ISSUER', undefined, 'endpoint'))
  if (issuer !== undefined && protocol !== 'oidc') {
    report('UNIVERSITY_ISSUER', 'is used only with UNIVERSITY_PROTOCOL=oidc')
  }
  if (issuer !== undefined && production && !issuer.startsWith('https:')) {
    report('UNIVERSITY_ISSUER', 'must be an https: URL when NODE_ENV=production')
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
  // docs/decisions.md, "Sandbox": both providers are simulated only when neither is configured, and never in
  // production; configuring one alone would leave the other simulated, minting logins for anyone.
  const universityConfigured = universityProviderConfigured(env, protocol)
  if (production && !universityConfigured) {
    report(
      protocol === 'oidc' ? 'UNIVERSITY_ISSUER' : 'UNIVERSITY_AUTHORIZE_URL',
      'a university provider is required when NODE_ENV=production (no sandbox there)',
    )
  }
  if (!production && universityConfigured && messengerBase === undefined) {
    report(
      'MESSENGER_API_BASE_URL',
      'is required when a university provider is configured (the sandbox runs only with no provider configured)',
    )
  }
  if (!production && !universityConfigured && messengerBase !== undefined) {
    report(
      protocol === 'oidc' ? 'UNIVERSITY_ISSUER' : 'UNIVERSITY_AUTHORIZE_URL',
      'is required when MESSENGER_API_BASE_URL is set (the sandbox runs only with no provider configured)',
    )
  }
  const simulated = !production && !universityConfigured && messengerBase === undefined
  const sandbox: SandboxConfig = { messenger: simulated, university: simulated }
  const smtp = guard(null, () => smtpUrl(env, production))
  if (production) {
    const given = read(env, 'PUBLIC_BASE_URL')
    if (given === undefined || !publicBaseUrl.startsWith('https:')) {
      report(
        'PUBLIC_BASE_URL',
        'an https: URL is required when NODE_ENV=production (the attempt cookie is Secure only over https)',
      )
    }
    const allowed = list(env, 'MESSENGER_ALLOWED_APP_IDS') ?? []
    if (allowed.length === 0) {
      report('MESSENGER_ALLOWED_APP_IDS', 'is required when NODE_ENV=production')
    }
    // SPEC.md, "Messenger platform secrets": in production no AppSecret comes from a client.
    const held = guard(new Map<string, string>(), () => appSecrets(env))
    const missing = allowed.filter((appId) => !held.has(appId))
    if (missing.length > 0) {
      report(
        'MESSENGER_APP_SECRETS',
        `is required when NODE_ENV=production: a server-held secret for each appId of MESSENGER_ALLOWED_APP_IDS (missing: ${missing.join(', ')})`,
      )
    }
    if (read(env, 'DATA_ENCRYPTION_KEY') === undefined) {
      report('DATA_ENCRYPTION_KEY', 'is required when NODE_ENV=production')
    }
  }
  const sandboxBase = `${publicBaseUrl}/_sandbox`
  const clientId =
    read(env, 'UNIVERSITY_CLIENT_ID') ?? (sandbox.university ? 'sandbox-client' : undefined)
  const clientSecret =
    read(env, 'UNIVERSITY_CLIENT_SECRET') ?? (sandbox.university ? 'sandbox-secret' : undefined)
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
  const linkMaxAge = read(env, 'UNIVERSITY_LINK_MAX_AGE')

  const sessionTtlMs = guard(30 * DAY_MS, () => duration(env, 'SESSION_TTL', '30d', '3650d'))
  // docs/decisions.md, "Sessions": the write-back interval never exceeds a tenth of the TTL.
  const sessionTouchIntervalMs = Math.min(
    guard(60_000, () => duration(env, 'SESSION_TOUCH_INTERVAL', '60s', '1d')),
    Math.floor(sessionTtlMs / 10),
  )
  const sessionMaxAge = read(env, 'SESSION_MAX_AGE')
  const sessionMaxAgeMs =
    sessionMaxAge === undefined
      ? null
      : guard(null, () => duration(env, 'SESSION_MAX_AGE', sessionMaxAge, '3650d'))

  const keys = guard(null, () => encryptionKeys(env))
  const logLevel = read(env, 'LOG_LEVEL') ?? 'info'
  if (!LOG_LEVELS.includes(logLevel)) report('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}`)
  // Parsed once: the database, the development key file beside it, the backups all follow it.
  const database = guard(DEFAULT_DATABASE_URL, () => databaseUrl(env))

  const config: Config = Object.freeze({
    port,
    host,
    publicBaseUrl,
    databaseUrl: database,
    databasePoolSize: guard(10, () => integer(env, 'DATABASE_POOL_SIZE', 10, 1, 1000)),
    redisUrl: guard(null, () => redisUrl(env)),
    smtpUrl: smtp,
    outboxDir: './data/outbox',
    mailFrom: read(env, 'MAIL_FROM') ?? 'campusgate <no-reply@campusgate.invalid>',
    messenger: Object.freeze({
      apiBaseUrl:
        messengerBase ?? (sandbox.messenger ? `${sandboxBase}/messenger` : WECHAT_API_BASE_URL),
      allowedAppIds: list(env, 'MESSENGER_ALLOWED_APP_IDS'),
      appSecrets: guard(new Map<string, string>(), () => appSecrets(env)),
      timeoutMs: 5000,
    }),
    university: Object.freeze({
      authorizeUrl: authorizeUrl ?? `${sandboxBase}/university/authorise`,
      tokenUrl: tokenUrl ?? `${sandboxBase}/university/token`,
      clientId: clientId ?? '',
      clientSecret: clientSecret ?? '',
      attemptTtlMs: guard(10 * 60_000, () => duration(env, 'UNIVERSITY_ATTEMPT_TTL', '10m', '1d')),
      callbackBinding: bindingRaw === 'none' ? 'none' : 'cookie',
      callbackAllowedIps,
      timeoutMs: 5000,
      protocol,
      issuer: issuer ?? (sandbox.university && protocol === 'oidc' ? `${sandboxBase}/oidc` : null),
      scopes: read(env, 'UNIVERSITY_SCOPES') ?? 'openid email profile',
      tokenAuthMethod,
      userInfoUrl:
        userInfoUrl ?? (sandbox.university ? `${sandboxBase}/university/user/data` : null),
      identityBinding: guard('exclusive', () =>
        oneOf(env, 'UNIVERSITY_IDENTITY_BINDING', ['exclusive', 'shared'] as const, 'exclusive'),
      ),
      emailDomains: guard(null, () => emailDomains(env)),
      linkMaxAgeMs:
        linkMaxAge === undefined
          ? null
          : guard(null, () => duration(env, 'UNIVERSITY_LINK_MAX_AGE', linkMaxAge, '3650d')),
    }),
    mailLimits: Object.freeze({
      perUser: guard(5, () => integer(env, 'MAIL_LIMIT_PER_USER', 5, 1, 1_000_000)),
      perRecipient: guard(5, () => integer(env, 'MAIL_LIMIT_PER_RECIPIENT', 5, 1, 1_000_000)),
      windowMs: 3_600_000,
    }),
    sandbox: Object.freeze(sandbox),
    sessionTtlMs,
    sessionTouchIntervalMs,
    sessionMaxAgeMs,
    registrationCodeTtlMs: guard(30 * 60_000, () =>
      duration(env, 'REGISTRATION_CODE_TTL', '30m', '7d'),
    ),
    trustProxy: guard(false, () => trustProxy(env)),
    logLevel,
    dataEncryptionKeys: keys === null ? null : Object.freeze(keys),
    dataEncryptionKeyFile: keyFileFor(database),
    rateLimit: Object.freeze({
      windowMs: guard(60_000, () => duration(env, 'RATE_LIMIT_WINDOW', '1m', '1d')),
      globalMax: guard(1000, () => integer(env, 'RATE_LIMIT_PER_ADDRESS', 1000, 0, MAX_RATE_LIMIT)),
      sensitiveMax: guard(100, () =>
        integer(env, 'RATE_LIMIT_REGISTRATION_PER_ADDRESS', 100, 0, MAX_RATE_LIMIT),
      ),
      perSessionMax: guard(600, () =>
        integer(env, 'RATE_LIMIT_PER_SESSION', 600, 0, MAX_RATE_LIMIT),
      ),
    }),
    requestTimeoutMs: guard(30_000, () => duration(env, 'REQUEST_TIMEOUT', '30s', '10m')),
    metricsToken: guard(null, () => metricsToken(env)),
    auditRetentionMs: guard(90 * DAY_MS, () => duration(env, 'AUDIT_RETENTION', '90d', '3650d')),
    backups: guard(null, () => backups(env, database)),
    webhook: webhookConfig(env, production, guard),
    console: Object.freeze({
      enabled: guard(true, () => oneOf(env, 'CONSOLE', ['on', 'off'] as const, 'on') === 'on'),
      operators: Object.freeze(list(env, 'CONSOLE_OPERATORS') ?? []),
    }),
  })
  done()
  return config
}

/**
 * WEBHOOK_URL and WEBHOOK_SECRET. Secrets are Standard Webhooks' `whsec_` and the base64 of 24 to
 * 64 bytes (its recommended sizes); messages never repeat one. In production an endpoint off this
 * machine must be https: the events name users.
 */
function webhookConfig(env: Env, production: boolean, guard: Problems['guard']): WebhookConfig {
  const endpoints = guard([], () => webhookEndpoints(env, production))
  const secrets = guard([], () => webhookSecrets(env))
  guard(undefined, () => {
    if (endpoints.length > 0 && secrets.length === 0) {
      fail('WEBHOOK_SECRET', 'is required when WEBHOOK_URL is set (every event is signed)')
    }
  })
  return Object.freeze({
    endpoints: Object.freeze(endpoints),
    secrets: Object.freeze(secrets),
    retryForMs: guard(3 * DAY_MS, () => duration(env, 'WEBHOOK_RETRY_FOR', '3d', '30d')),
    tryTimeoutMs: 10_000,
    pollIntervalMs: 1000,
  })
}

function webhookEndpoints(env: Env, production: boolean): string[] {
  const endpoints = (list(env, 'WEBHOOK_URL') ?? []).map((raw) => {
    let url: URL
    try {
      url = new URL(raw)
    } catch {
      return fail('WEBHOOK_URL', `"${raw}" is not a URL`)
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      fail('WEBHOOK_URL', `"${raw}" is not an http(s) URL`)
    }
    if (url.username !== '' || url.password !== '') {
      fail(
        'WEBHOOK_URL',
        'must not carry a user name or password (WEBHOOK_SECRET signs every event)',
      )
    }
    if (production && url.protocol !== 'https:' && !isLoopbackHost(url.hostname)) {
      fail('WEBHOOK_URL', `"${raw}" must be https: when NODE_ENV=production (or on loopback)`)
    }
    return raw
  })
  if (new Set(endpoints).size !== endpoints.length) fail('WEBHOOK_URL', 'names an endpoint twice')
  return endpoints
}

function webhookSecrets(env: Env): string[] {
  return (list(env, 'WEBHOOK_SECRET') ?? []).map((item, index) => {
    const base64 = item.startsWith('whsec_') ? item.slice('whsec_'.length) : null
    const bytes =
      base64 !== null && /^[A-Za-z0-9+/]+={0,2}$/.test(base64) && base64.length % 4 === 0
        ? Buffer.from(base64, 'base64').length
        : 0
    if (bytes < 24 || bytes > 64) {
      fail(
        'WEBHOOK_SECRET',
        `secret ${index + 1} is not whsec_ and the base64 of 24 to 64 bytes (make one with: echo whsec_$(openssl rand -base64 32))`,
      )
    }
    return item
  })
}
