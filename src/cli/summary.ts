import type { Config } from '../config.js'
import { VERSION } from '../version.js'

/** A URL with its password (and, for provider URLs, any query) replaced, fit for a terminal. */
export function maskUrl(raw: string): string {
  try {
    const url = new URL(raw)
    if (url.password !== '') url.password = '****'
    for (const key of [...url.searchParams.keys()]) {
      if (/secret|token|password|key/i.test(key)) url.searchParams.set(key, '****')
    }
    return url.toString()
  } catch {
    return '(unparsable URL)'
  }
}

function describeDatabase(databaseUrl: string): string {
  if (databaseUrl.startsWith('sqlite:')) return `SQLite ${databaseUrl.slice('sqlite:'.length)}`
  return `PostgreSQL ${maskUrl(databaseUrl)}`
}

function perWindow(max: number, windowMs: number): string {
  if (max === 0) return 'off'
  return `${max} per ${windowMs % 60_000 === 0 ? `${windowMs / 60_000} min` : `${windowMs} ms`}`
}

function duration(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    if (ms % size === 0) return `${ms / size}${unit}`
  }
  return `${ms}ms`
}

/** The API of each platform an app runs on (`wechat` always: unlisted apps are WeChat's). */
function messengerApis(config: Config): string {
  const platforms = new Set(['wechat', ...config.messenger.appPlatforms.values()])
  return [...platforms]
    .map((platform) =>
      platforms.size === 1
        ? (config.messenger.apiBaseUrls.get(platform) ?? '')
        : `${platform} ${config.messenger.apiBaseUrls.get(platform) ?? ''}`,
    )
    .join(', ')
}

/**
 * The one-screen summary a person at a terminal sees when the service starts: where it listens
 * and what it runs with. Secrets never appear: passwords in URLs and the client secret are masked.
 */
export function startupSummary(config: Config, listeningOn: string): string {
  const sandbox = config.sandbox
  const rows: [string, string][] = [
    ['listening', `${listeningOn}  (public URL ${config.server.publicBaseUrl})`],
    ['API docs', `${config.server.publicBaseUrl}/docs`],
    ['database', describeDatabase(config.database.url)],
    [
      'messenger',
      sandbox.messenger
        ? `sandbox, simulated at ${config.server.publicBaseUrl}/_sandbox/`
        : messengerApis(config) +
          (config.messenger.allowedAppIds === null
            ? ' (any app id)'
            : ` (app ids: ${config.messenger.allowedAppIds.join(', ')})`),
    ],
    [
      'university',
      sandbox.university
        ? `sandbox, simulated at ${config.server.publicBaseUrl}/_sandbox/`
        : `${maskUrl(config.university.authorizeUrl)} (client ${config.university.clientId}, ` +
          `secret ****, binding ${config.university.callbackBinding})`,
    ],
    [
      'mail',
      config.mail.smtpUrl === null
        ? `.eml files in ${config.mail.outboxDir} (links are logged)`
        : `${maskUrl(config.mail.smtpUrl)} from ${config.mail.from}`,
    ],
    [
      'rate limits',
      `${perWindow(config.rateLimit.globalMax, config.rateLimit.windowMs)} per address, ` +
        `${perWindow(config.rateLimit.sensitiveMax, config.rateLimit.windowMs)} on registration; ` +
        (config.database.redisUrl === null
          ? 'counted in memory'
          : `shared in ${maskUrl(config.database.redisUrl)}`),
    ],
    [
      'sessions',
      `TTL ${duration(config.sessions.ttlMs)}, written back every ` +
        `${duration(config.sessions.touchIntervalMs)}` +
        (config.sessions.maxAgeMs === null
          ? ''
          : `, at most ${duration(config.sessions.maxAgeMs)}`) +
        `; codes ${duration(config.sessions.registrationCodeTtlMs)}`,
    ],
    [
      'metrics',
      `/metrics, ${config.operations.metricsToken === null ? 'open' : 'bearer token required'}`,
    ],
    ['log level', config.operations.logLevel],
  ]
  const width = Math.max(...rows.map(([label]) => label.length))
  return [
    `campusgate ${VERSION}`,
    ...rows.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`),
    '',
  ].join('\n')
}
