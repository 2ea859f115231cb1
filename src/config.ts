import { isIP } from 'node:net'
import { dirname, join } from 'node:path'

/** Which simulated providers the server mounts under `/_sandbox/`. */
export interface SandboxConfig {
  readonly messenger: boolean
  readonly university: boolean
}

export type CallbackBinding = 'cookie' | 'none'

export interface RateLimitConfig {
  /** Requests per window per client address, across all routes. */
  readonly globalMax: number
  /** Requests per window per client address on registration and callback routes. */
  readonly sensitiveMax: number
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
  }
  readonly sandbox: SandboxConfig
  readonly sessionTtlMs: number
  readonly sessionTouchIntervalMs: number
  readonly registrationCodeTtlMs: number
  readonly trustProxy: boolean | number | string[]
  readonly logLevel: string
  /** DATA_ENCRYPTION_KEY: the first encrypts, all decrypt; `null` to use `dataEncryptionKeyFile`. */
  readonly dataEncryptionKeys: readonly Buffer[] | null
  /** Where a development key is kept (created on first start) when DATA_ENCRYPTION_KEY is unset. */
  readonly dataEncryptionKeyFile: string
  readonly rateLimit: RateLimitConfig
  /** Bearer token /metrics requires; open when null. */
  readonly metricsToken: string | null
  /** How long audit events are kept (AUDIT_RETENTION). */
  readonly auditRetentionMs: number
}

/** Thrown for a bad environment; its message is the one line start-up prints. */
export class ConfigError extends Error {}

const WECHAT_API_BASE_URL = 'https://api.weixin.qq.com'
const DURATION_UNITS_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const
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
  throw new ConfigError(`${name}: ${why}`)
}

function duration(env: Env, name: string, fallback: string): number {
  const raw = read(env, name) ?? fallback
  return parseDuration(raw) ?? fail(name, `"${raw}" is not a duration like 30d, 30m, 2s or 500ms`)
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

function list(env: Env, name: string): string[] | null {
  const raw = read(env, name)
  if (raw === undefined) return null
  return raw
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '')
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

function trustProxy(env: Env): boolean | number | string[] {
  const raw = read(env, 'TRUST_PROXY')
  if (raw === undefined || raw === 'false') return false
  if (raw === 'true') return true
  if (/^\d+$/.test(raw)) return Number(raw)
  return ipList(env, 'TRUST_PROXY')
}

function redisUrl(env: Env): string | null {
  const raw = read(env, 'REDIS_URL')
  if (raw === undefined) return null
  return /^rediss?:\/\/.+/.test(raw)
    ? raw
    : fail('REDIS_URL', 'must be redis://host:port or rediss://…')
}

function dataEncryptionKeys(env: Env): Buffer[] | null {
  const items = list(env, 'DATA_ENCRYPTION_KEY')
  if (items === null) return null
  const keys = items.map((item) => Buffer.from(item, 'base64'))
  if (
    keys.length === 0 ||
    keys.some((key, i) => key.length !== 32 || !/^[A-Za-z0-9+/]+=*$/.test(items[i]))
  ) {
    fail('DATA_ENCRYPTION_KEY', 'must be base64 of 32 random bytes (a comma list to rotate keys)')
  }
  return keys
}

/** Beside the SQLite file; for PostgreSQL in ./data, shared by the instances of one checkout. */
function keyFileFor(databaseUrl: string): string {
  const path = databaseUrl.startsWith('sqlite:') ? databaseUrl.slice('sqlite:'.length) : ''
  if (path === '' || path === ':memory:') return './data/campusgate.key'
  return join(dirname(path.replace(/^\/\/(?=\/)/, '')), 'campusgate.key')
}

function databaseUrl(env: Env): string {
  const raw = read(env, 'DATABASE_URL') ?? 'sqlite:./data/campusgate.db'
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
 * Reads the whole configuration from the environment. `main.ts` is the only caller that passes
 * `process.env`; tests pass plain objects.
 */
export function loadConfig(env: Env): Config {
  const port = integer(env, 'PORT', 3000, 0, 65535)
  const host = read(env, 'HOST') ?? '127.0.0.1'
  const production = read(env, 'NODE_ENV') === 'production'

  const linkHost = host === '0.0.0.0' || host === '::' ? 'localhost' : host
  const hostInUrl = linkHost.includes(':') ? `[${linkHost}]` : linkHost
  const publicBaseUrl = httpUrl(env, 'PUBLIC_BASE_URL', `http://${hostInUrl}:${port}`)!

  const messengerBase = httpUrl(env, 'MESSENGER_API_BASE_URL')
  const authorizeUrl = httpUrl(env, 'UNIVERSITY_AUTHORIZE_URL', undefined, 'endpoint')
  const tokenUrl = httpUrl(env, 'UNIVERSITY_TOKEN_URL', undefined, 'endpoint')
  if ((authorizeUrl === undefined) !== (tokenUrl === undefined)) {
    fail(
      authorizeUrl === undefined ? 'UNIVERSITY_AUTHORIZE_URL' : 'UNIVERSITY_TOKEN_URL',
      'set both UNIVERSITY_AUTHORIZE_URL and UNIVERSITY_TOKEN_URL, or neither for the sandbox',
    )
  }
  // docs/decisions.md, "Sandbox": an unconfigured provider is simulated in development; in production the
  // messenger falls back to the real WeChat host and the identity provider must be configured.
  const sandbox: SandboxConfig = {
    messenger: messengerBase === undefined && !production,
    university: authorizeUrl === undefined && !production,
  }
  if (production && authorizeUrl === undefined) {
    fail('UNIVERSITY_AUTHORIZE_URL', 'is required when NODE_ENV=production (no sandbox there)')
  }
  const sandboxBase = `${publicBaseUrl}/_sandbox`
  const clientId =
    read(env, 'UNIVERSITY_CLIENT_ID') ?? (sandbox.university ? 'sandbox-client' : undefined)
  const clientSecret =
    read(env, 'UNIVERSITY_CLIENT_SECRET') ?? (sandbox.university ? 'sandbox-secret' : undefined)
  if (clientId === undefined)
    fail('UNIVERSITY_CLIENT_ID', 'is required with a real identity provider')
  if (clientSecret === undefined) {
    fail('UNIVERSITY_CLIENT_SECRET', 'is required with a real identity provider')
  }

  const bindingRaw = read(env, 'UNIVERSITY_CALLBACK_BINDING') ?? 'cookie'
  if (bindingRaw !== 'cookie' && bindingRaw !== 'none') {
    fail('UNIVERSITY_CALLBACK_BINDING', 'must be "cookie" or "none"')
  }
  const callbackAllowedIps = ipList(env, 'UNIVERSITY_CALLBACK_ALLOWED_IPS')
  if (bindingRaw === 'none' && callbackAllowedIps.length === 0) {
    fail('UNIVERSITY_CALLBACK_ALLOWED_IPS', 'is required when UNIVERSITY_CALLBACK_BINDING=none')
  }

  const sessionTtlMs = duration(env, 'SESSION_TTL', '30d')
  // docs/decisions.md, "Sessions": the write-back interval never exceeds a tenth of the TTL.
  const sessionTouchIntervalMs = Math.min(
    duration(env, 'SESSION_TOUCH_INTERVAL', '60s'),
    Math.floor(sessionTtlMs / 10),
  )

  const logLevel = read(env, 'LOG_LEVEL') ?? 'info'
  if (!LOG_LEVELS.includes(logLevel)) fail('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}`)

  const smtpUrl = read(env, 'SMTP_URL') ?? null
  if (smtpUrl !== null && !/^smtps?:\/\/.+/.test(smtpUrl)) {
    fail('SMTP_URL', 'must be smtp://host:port or smtps://…')
  }

  return Object.freeze({
    port,
    host,
    publicBaseUrl,
    databaseUrl: databaseUrl(env),
    databasePoolSize: integer(env, 'DATABASE_POOL_SIZE', 10, 1, 1000),
    redisUrl: redisUrl(env),
    smtpUrl,
    outboxDir: './data/outbox',
    mailFrom: read(env, 'MAIL_FROM') ?? 'campusgate <no-reply@campusgate.invalid>',
    messenger: Object.freeze({
      apiBaseUrl:
        messengerBase ?? (sandbox.messenger ? `${sandboxBase}/messenger` : WECHAT_API_BASE_URL),
      allowedAppIds: list(env, 'MESSENGER_ALLOWED_APP_IDS'),
      timeoutMs: 5000,
    }),
    university: Object.freeze({
      authorizeUrl: authorizeUrl ?? `${sandboxBase}/university/authorise`,
      tokenUrl: tokenUrl ?? `${sandboxBase}/university/token`,
      clientId,
      clientSecret,
      attemptTtlMs: duration(env, 'UNIVERSITY_ATTEMPT_TTL', '10m'),
      callbackBinding: bindingRaw,
      callbackAllowedIps,
      timeoutMs: 5000,
    }),
    sandbox: Object.freeze(sandbox),
    sessionTtlMs,
    sessionTouchIntervalMs,
    registrationCodeTtlMs: duration(env, 'REGISTRATION_CODE_TTL', '30m'),
    trustProxy: trustProxy(env),
    logLevel,
    dataEncryptionKeys: dataEncryptionKeys(env),
    dataEncryptionKeyFile: keyFileFor(databaseUrl(env)),
    rateLimit: Object.freeze({ globalMax: 1000, sensitiveMax: 100, windowMs: 60_000 }),
    metricsToken: metricsToken(env),
    auditRetentionMs: duration(env, 'AUDIT_RETENTION', '90d'),
  })
}
