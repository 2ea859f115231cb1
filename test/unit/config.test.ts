import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { ConfigError, loadConfig, parseDuration } from '../../src/config.js'
import { SECRET_VARIABLES } from '../../src/config/secret-files.js'

describe('parseDuration', () => {
  it('reads days, hours, minutes, seconds and milliseconds', () => {
    assert.equal(parseDuration('30d'), 30 * 86_400_000)
    assert.equal(parseDuration('2h'), 7_200_000)
    assert.equal(parseDuration('30m'), 1_800_000)
    assert.equal(parseDuration('2s'), 2000)
    assert.equal(parseDuration('500ms'), 500)
  })

  it('refuses anything else', () => {
    for (const bad of ['', '30', 'd', '1.5h', '-1m', '0s', '10 minutes', '1w']) {
      assert.equal(parseDuration(bad), null, bad)
    }
  })
})

const KEY_A = Buffer.alloc(32, 1).toString('base64')
const KEY_B = Buffer.alloc(32, 2).toString('base64')

/** The least a production start needs. */
const PRODUCTION = {
  NODE_ENV: 'production',
  DATABASE_URL: 'postgres://campusgate@db.example.edu/campusgate',
  PUBLIC_BASE_URL: 'https://campusgate.example.edu',
  SMTP_URL: 'smtps://mail.example.edu:465',
  MESSENGER_ALLOWED_APP_IDS: 'wx-app',
  MESSENGER_APP_SECRETS: 'wx-app:held-app-secret',
  DATA_ENCRYPTION_KEY: KEY_A,
  UNIVERSITY_AUTHORIZE_URL: 'https://idp.example/a',
  UNIVERSITY_TOKEN_URL: 'https://idp.example/t',
  UNIVERSITY_CLIENT_ID: 'id',
  UNIVERSITY_CLIENT_SECRET: 'secret',
} as const

/** Both providers configured, so no sandbox. */
const PROVIDERS = {
  MESSENGER_API_BASE_URL: 'https://messenger.example',
  UNIVERSITY_AUTHORIZE_URL: 'https://idp.example/a',
  UNIVERSITY_TOKEN_URL: 'https://idp.example/t',
  UNIVERSITY_CLIENT_ID: 'id',
  UNIVERSITY_CLIENT_SECRET: 'secret',
} as const

/**
 * Start-up refuses `env` naming `variable`: one line of the error starts with it. Every line names
 * one variable, each at most once (issue 39: every bad variable at once).
 */
function namesVariable(error: unknown, variable: string): boolean {
  if (!(error instanceof ConfigError)) return false
  const lines = error.message.split('\n')
  const names = lines.map((line) => /^([A-Z][A-Z0-9_]*): ./.exec(line)?.[1])
  return (
    lines.some((line) => line.startsWith(`${variable}:`)) &&
    names.every((name) => name !== undefined) &&
    new Set(names).size === names.length &&
    lines.length === error.problems.length
  )
}

function refuses(env: Record<string, string>, variable: string): void {
  assert.throws(
    () => loadConfig(env),
    (error: unknown) => namesVariable(error, variable),
    `${variable} for ${JSON.stringify(env)}`,
  )
}

describe('loadConfig', () => {
  it('names every bad variable at once, one line each, in the order they are read (issue 39)', () => {
    assert.throws(
      () =>
        loadConfig({
          PORT: 'eighty',
          SESSION_TTL: 'forever',
          LOG_LEVEL: 'chatty',
          REDIS_URL: 'http://cache',
          WEBHOOK_URL: 'not a url',
          WEBHOOK_SECRET: 'short',
        }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.message ===
          [
            'PORT: "eighty" is not a whole number from 0 to 65535',
            'SESSION_TTL: "forever" is not a duration like 30d, 30m, 2s or 500ms',
            'LOG_LEVEL: must be one of fatal, error, warn, info, debug, trace, silent',
            'REDIS_URL: must be redis://host:port or rediss://…',
            'WEBHOOK_URL: "not a url" is not a URL',
            'WEBHOOK_SECRET: secret 1 is not whsec_ and the base64 of 24 to 64 bytes (make one with: echo whsec_$(openssl rand -base64 32))',
          ].join('\n'),
    )
  })

  it('defaults to SQLite, port 3000 and both sandbox providers', () => {
    const config = loadConfig({})
    assert.equal(config.server.port, 3000)
    assert.equal(config.database.url, 'sqlite:./data/campusgate.db')
    assert.deepEqual(config.sandbox, { messenger: true, university: true })
    assert.equal(config.server.publicBaseUrl, 'http://127.0.0.1:3000')
    assert.deepEqual(
      config.messenger.apiBaseUrls,
      new Map([
        ['wechat', 'http://127.0.0.1:3000/_sandbox/messenger'],
        ['qq', 'http://127.0.0.1:3000/_sandbox/messenger/qq'],
        ['douyin', 'http://127.0.0.1:3000/_sandbox/messenger/douyin'],
      ]),
    )
    assert.equal(config.messenger.linkByUnionId, true)
    assert.equal(config.sessions.ttlMs, 30 * 86_400_000)
    assert.equal(config.sessions.touchIntervalMs, 60_000)
    assert.equal(config.sessions.registrationCodeTtlMs, 30 * 60_000)
    assert.equal(config.university.attemptTtlMs, 10 * 60_000)
    assert.ok(Object.isFrozen(config))
  })

  it('reads METRICS_TOKEN and AUDIT_RETENTION (open metrics, 90 days by default)', () => {
    assert.equal(loadConfig({}).operations.metricsToken, null)
    assert.equal(loadConfig({}).operations.auditRetentionMs, 90 * 86_400_000)
    const config = loadConfig({ METRICS_TOKEN: 'x'.repeat(16), AUDIT_RETENTION: '365d' })
    assert.equal(config.operations.metricsToken, 'x'.repeat(16))
    assert.equal(config.operations.auditRetentionMs, 365 * 86_400_000)
    assert.throws(() => loadConfig({ METRICS_TOKEN: 'short' }), /^Error: METRICS_TOKEN: /)
    assert.throws(() => loadConfig({ AUDIT_RETENTION: 'forever' }), /^Error: AUDIT_RETENTION: /)
  })

  it('reads BACKUP_DIR, BACKUP_INTERVAL and BACKUP_KEEP (off unless set, 7 kept by default)', () => {
    assert.equal(loadConfig({}).backups, null)
    assert.deepEqual(loadConfig({ BACKUP_DIR: '/b', BACKUP_INTERVAL: '6h' }).backups, {
      dir: '/b',
      intervalMs: 6 * 3_600_000,
      keep: 7,
    })
    assert.equal(
      loadConfig({ BACKUP_DIR: '/b', BACKUP_INTERVAL: '1d', BACKUP_KEEP: '1' }).backups?.keep,
      1,
    )
  })

  it('caps the touch interval at a tenth of the session TTL', () => {
    assert.equal(
      loadConfig({ SESSION_TTL: '10s', SESSION_TOUCH_INTERVAL: '60s' }).sessions.touchIntervalMs,
      1000,
    )
  })

  it('keeps provider endpoints exactly as configured', () => {
    const config = loadConfig({
      MESSENGER_API_BASE_URL: 'https://messenger.example',
      UNIVERSITY_AUTHORIZE_URL: 'https://idp.example/oauth/authorise/',
      UNIVERSITY_TOKEN_URL: 'https://idp.example/oauth/token',
      UNIVERSITY_CLIENT_ID: 'id',
      UNIVERSITY_CLIENT_SECRET: 'secret',
    })
    assert.equal(config.university.authorizeUrl, 'https://idp.example/oauth/authorise/')
    assert.deepEqual(config.sandbox, { messenger: false, university: false })
  })

  for (const [env, variable] of [
    [{ PORT: 'eighty' }, 'PORT'],
    [{ SESSION_TTL: 'forever' }, 'SESSION_TTL'],
    [{ SESSION_MAX_AGE: 'forever' }, 'SESSION_MAX_AGE'],
    [{ SESSION_MAX_AGE: '0s' }, 'SESSION_MAX_AGE'],
    [{ SESSION_MAX_AGE: '3651d' }, 'SESSION_MAX_AGE'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ UNIVERSITY_AUTHORIZE_URL: 'https://idp.example/a' }, 'UNIVERSITY_TOKEN_URL'],
    [{ UNIVERSITY_CALLBACK_BINDING: 'ip' }, 'UNIVERSITY_CALLBACK_BINDING'],
    [{ UNIVERSITY_CALLBACK_BINDING: 'none' }, 'UNIVERSITY_CALLBACK_ALLOWED_IPS'],
    [{ UNIVERSITY_CALLBACK_ALLOWED_IPS: '10.0.0.300' }, 'UNIVERSITY_CALLBACK_ALLOWED_IPS'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ SMTP_URL: 'mail.example' }, 'SMTP_URL'],
    [{ PUBLIC_BASE_URL: 'ftp://x' }, 'PUBLIC_BASE_URL'],
    [{ NODE_ENV: 'production' }, 'UNIVERSITY_AUTHORIZE_URL'],
    [{ UNIVERSITY_PROTOCOL: 'shibboleth' }, 'UNIVERSITY_PROTOCOL'],
    [{ UNIVERSITY_ISSUER: 'https://idp.example' }, 'UNIVERSITY_ISSUER'],
    [{ NODE_ENV: 'production', UNIVERSITY_PROTOCOL: 'oidc' }, 'UNIVERSITY_ISSUER'],
    [
      {
        NODE_ENV: 'production',
        UNIVERSITY_PROTOCOL: 'oidc',
        UNIVERSITY_ISSUER: 'http://idp.example',
      },
      'UNIVERSITY_ISSUER',
    ],
    [
      {
        UNIVERSITY_PROTOCOL: 'oidc',
        UNIVERSITY_CALLBACK_BINDING: 'none',
        UNIVERSITY_CALLBACK_ALLOWED_IPS: '10.0.0.1',
      },
      'UNIVERSITY_CALLBACK_BINDING',
    ],
    [
      { UNIVERSITY_PROTOCOL: 'oidc', MESSENGER_API_BASE_URL: 'https://messenger.example' },
      'UNIVERSITY_ISSUER',
    ],
    [{ UNIVERSITY_EMAIL_DOMAINS: 'ucl.ac.uk,not a domain' }, 'UNIVERSITY_EMAIL_DOMAINS'],
    [{ UNIVERSITY_EMAIL_DOMAINS: 'https://ucl.ac.uk' }, 'UNIVERSITY_EMAIL_DOMAINS'],
    [{ UNIVERSITY_EMAIL_DOMAINS: 'ucl.ac.uk/' }, 'UNIVERSITY_EMAIL_DOMAINS'],
    [{ UNIVERSITY_EMAIL_DOMAINS: 'student@ucl.ac.uk' }, 'UNIVERSITY_EMAIL_DOMAINS'],
    [{ UNIVERSITY_EMAIL_DOMAINS: 'ucl..ac.uk' }, 'UNIVERSITY_EMAIL_DOMAINS'],
    [{ UNIVERSITY_EMAIL_DOMAINS: '-ucl.ac.uk' }, 'UNIVERSITY_EMAIL_DOMAINS'],
    [{ UNIVERSITY_EMAIL_DOMAINS: 'ucl_students.ac.uk' }, 'UNIVERSITY_EMAIL_DOMAINS'],
    [{ UNIVERSITY_EMAIL_DOMAINS: `${'a'.repeat(64)}.ac.uk` }, 'UNIVERSITY_EMAIL_DOMAINS'],
    [
      { UNIVERSITY_PROTOCOL: 'oidc', UNIVERSITY_TOKEN_AUTH_METHOD: 'client_secret_jwt' },
      'UNIVERSITY_TOKEN_AUTH_METHOD',
    ],
    [{ UNIVERSITY_TOKEN_AUTH_METHOD: 'client_secret_post' }, 'UNIVERSITY_TOKEN_AUTH_METHOD'],
    [{ UNIVERSITY_IDENTITY_BINDING: 'many' }, 'UNIVERSITY_IDENTITY_BINDING'],
    [{ UNIVERSITY_LINK_MAX_AGE: 'a year' }, 'UNIVERSITY_LINK_MAX_AGE'],
    [{ UNIVERSITY_USERINFO_URL: 'not a url' }, 'UNIVERSITY_USERINFO_URL'],
    [{ MAIL_LIMIT_PER_USER: '0' }, 'MAIL_LIMIT_PER_USER'],
    [{ MAIL_LIMIT_PER_RECIPIENT: 'many' }, 'MAIL_LIMIT_PER_RECIPIENT'],
    [{ BACKUP_DIR: '/var/backups/campusgate' }, 'BACKUP_INTERVAL'],
    [{ BACKUP_INTERVAL: '6h' }, 'BACKUP_DIR'],
    [{ BACKUP_DIR: '/b', BACKUP_INTERVAL: 'daily' }, 'BACKUP_INTERVAL'],
    [{ BACKUP_DIR: '/b', BACKUP_INTERVAL: '30s' }, 'BACKUP_INTERVAL'],
    [{ BACKUP_DIR: '/b', BACKUP_INTERVAL: '6h', BACKUP_KEEP: '0' }, 'BACKUP_KEEP'],
    [{ BACKUP_KEEP: 'all' }, 'BACKUP_KEEP'],
    [
      { DATABASE_URL: 'postgres://db/campusgate', BACKUP_DIR: '/b', BACKUP_INTERVAL: '6h' },
      'BACKUP_DIR',
    ],
    [{ DATABASE_URL: 'sqlite::memory:', BACKUP_DIR: '/b', BACKUP_INTERVAL: '6h' }, 'BACKUP_DIR'],
  ] as const) {
    it(`names ${variable} when it is wrong (${JSON.stringify(env)})`, () => {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) => namesVariable(error, variable),
      )
    })
  }

  it('reads SESSION_MAX_AGE as a duration; unset, sessions have no absolute end', () => {
    assert.equal(loadConfig({}).sessions.maxAgeMs, null)
    assert.equal(loadConfig({ SESSION_MAX_AGE: '180d' }).sessions.maxAgeMs, 180 * 86_400_000)
  })

  it('defaults the university identity settings as the README’s Configuration table says', () => {
    const {
      university,
      mail: { limits: mailLimits },
    } = loadConfig({})
    assert.equal(university.protocol, 'uclapi')
    assert.equal(university.issuer, null)
    assert.equal(university.scopes, 'openid email profile')
    assert.equal(university.tokenAuthMethod, null, 'unset: chosen from the discovery document')
    assert.equal(university.userInfoUrl, 'http://127.0.0.1:3000/_sandbox/university/user/data')
    assert.equal(university.identityBinding, 'exclusive')
    assert.equal(university.emailDomains, null)
    assert.equal(university.linkMaxAgeMs, null)
    assert.deepEqual(mailLimits, { perUser: 5, perRecipient: 5, windowMs: 3_600_000 })
  })

  it('reads the OIDC provider, the domains and the link age', () => {
    const config = loadConfig({
      UNIVERSITY_PROTOCOL: 'oidc',
      UNIVERSITY_ISSUER: 'https://login.example.ac.uk/realms/students',
      UNIVERSITY_CLIENT_ID: 'campusgate',
      UNIVERSITY_CLIENT_SECRET: 'secret',
      UNIVERSITY_EMAIL_DOMAINS: 'UCL.ac.uk, @cs.example.ac.uk, xn--bcher-kva.example',
      UNIVERSITY_LINK_MAX_AGE: '365d',
      UNIVERSITY_TOKEN_AUTH_METHOD: 'client_secret_basic',
      MESSENGER_API_BASE_URL: 'https://api.weixin.qq.com',
    })
    assert.equal(config.university.issuer, 'https://login.example.ac.uk/realms/students')
    assert.equal(config.university.tokenAuthMethod, 'client_secret_basic')
    assert.deepEqual(config.sandbox, { messenger: false, university: false })
    assert.deepEqual(config.university.emailDomains, [
      'ucl.ac.uk',
      'cs.example.ac.uk',
      'xn--bcher-kva.example',
    ])
    assert.equal(config.university.linkMaxAgeMs, 365 * 86_400_000)
  })

  it('simulates an OpenID Provider when the protocol is oidc and no issuer is set', () => {
    const config = loadConfig({ UNIVERSITY_PROTOCOL: 'oidc' })
    assert.deepEqual(config.sandbox, { messenger: true, university: true })
    assert.equal(config.university.issuer, 'http://127.0.0.1:3000/_sandbox/oidc')
  })

  it('never runs the sandbox in production', () => {
    const config = loadConfig(PRODUCTION)
    assert.deepEqual(config.sandbox, { messenger: false, university: false })
    assert.deepEqual(
      config.messenger.apiBaseUrls,
      new Map([
        ['wechat', 'https://api.weixin.qq.com'],
        ['qq', 'https://api.q.qq.com'],
        ['douyin', 'https://developer.toutiao.com'],
      ]),
    )
  })
})

describe('loadConfig: the sandbox fails closed', () => {
  it('refuses a university provider without a messenger platform', () => {
    const universityOnly: Record<string, string> = { ...PROVIDERS }
    delete universityOnly.MESSENGER_API_BASE_URL
    refuses(universityOnly, 'MESSENGER_API_BASE_URL')
  })

  it('refuses a messenger platform without a university provider', () => {
    refuses({ MESSENGER_API_BASE_URL: 'https://messenger.example' }, 'UNIVERSITY_AUTHORIZE_URL')
  })

  it('serves no sandbox once both providers are configured', () => {
    assert.deepEqual(loadConfig(PROVIDERS).sandbox, { messenger: false, university: false })
  })
})

describe('loadConfig: production is strict', () => {
  it('names every rule production adds at once, each in its own words', () => {
    assert.throws(
      () =>
        loadConfig({
          NODE_ENV: 'production',
          UNIVERSITY_PROTOCOL: 'oidc',
          UNIVERSITY_ISSUER: 'http://idp.example',
          UNIVERSITY_CLIENT_ID: 'id',
          UNIVERSITY_CLIENT_SECRET: 'secret',
          PUBLIC_BASE_URL: 'http://campusgate.example.edu',
          MESSENGER_ALLOWED_APP_IDS: 'wx-app',
          WEBHOOK_URL: 'https://a.example/h,http://forum.example/hooks',
          WEBHOOK_SECRET: `whsec_${Buffer.alloc(32, 3).toString('base64')}`,
        }),
      (error: unknown) =>
        error instanceof ConfigError &&
        assert.deepEqual(error.problems, [
          'UNIVERSITY_ISSUER: must be an https: URL when NODE_ENV=production',
          'DATABASE_URL: is required when NODE_ENV=production (sqlite:PATH or postgres://…; the default ./data file is for trying it out)',
          'SMTP_URL: is required when NODE_ENV=production (without it, confirmation links are written to files and the log)',
          'PUBLIC_BASE_URL: an https: URL is required when NODE_ENV=production (the attempt cookie is Secure only over https)',
          'MESSENGER_APP_SECRETS: is required when NODE_ENV=production: a server-held secret for each appId of MESSENGER_ALLOWED_APP_IDS (missing: wx-app)',
          'DATA_ENCRYPTION_KEY: is required when NODE_ENV=production',
          'WEBHOOK_URL: "http://forum.example/hooks" must be https: when NODE_ENV=production (or on loopback)',
        ]) === undefined,
    )
  })

  it('starts with everything production needs', () => {
    const config = loadConfig(PRODUCTION)
    assert.equal(config.server.publicBaseUrl, 'https://campusgate.example.edu')
    assert.deepEqual(config.secrets.dataEncryptionKeys, [Buffer.alloc(32, 1)])
  })

  for (const variable of [
    'DATABASE_URL',
    'SMTP_URL',
    'PUBLIC_BASE_URL',
    'MESSENGER_ALLOWED_APP_IDS',
    'MESSENGER_APP_SECRETS',
    'DATA_ENCRYPTION_KEY',
    'UNIVERSITY_AUTHORIZE_URL',
  ] as const) {
    it(`requires ${variable}`, () => {
      const env: Record<string, string> = { ...PRODUCTION }
      delete env[variable]
      if (variable === 'UNIVERSITY_AUTHORIZE_URL') delete env.UNIVERSITY_TOKEN_URL
      refuses(env, variable)
    })
  }

  it('requires a server-held secret for every allowed appId, naming MESSENGER_APP_SECRETS (issue 37)', () => {
    const env = {
      ...PRODUCTION,
      MESSENGER_ALLOWED_APP_IDS: 'wx-app,wx-second',
      MESSENGER_APP_SECRETS: 'wx-app:held-app-secret',
    }
    refuses(env, 'MESSENGER_APP_SECRETS')
    assert.throws(() => loadConfig(env), /missing: wx-second/)
    const both = loadConfig({ ...env, MESSENGER_APP_SECRETS: 'wx-app:s1, wx-second:s2' })
    assert.deepEqual(
      [...both.messenger.appSecrets],
      [
        ['wx-app', 's1'],
        ['wx-second', 's2'],
      ],
    )
  })

  it('reads MESSENGER_APP_SECRETS as appId:secret items and never repeats a secret', () => {
    for (const bad of [
      'wx-app',
      'wx-app:',
      ':very-secret-value',
      'wx-app:a,wx-app:very-secret-value',
    ]) {
      refuses({ MESSENGER_APP_SECRETS: bad }, 'MESSENGER_APP_SECRETS')
      assert.throws(
        () => loadConfig({ MESSENGER_APP_SECRETS: bad }),
        (error: unknown) => error instanceof ConfigError && !error.message.includes('very-secret'),
      )
    }
    // A secret may hold a colon of its own: only the first one splits.
    assert.equal(
      loadConfig({ MESSENGER_APP_SECRETS: 'wx-app:a:b' }).messenger.appSecrets.get('wx-app'),
      'a:b',
    )
    // Outside production it is optional: every client's appSecret is then forwarded.
    assert.equal(loadConfig({}).messenger.appSecrets.size, 0)
    // The frozen configuration prints no secret when logged as JSON.
    assert.ok(
      !JSON.stringify(loadConfig({ MESSENGER_APP_SECRETS: 'wx-app:very-secret-value' })).includes(
        'very-secret',
      ),
    )
  })

  it('requires an https: PUBLIC_BASE_URL', () => {
    refuses({ ...PRODUCTION, PUBLIC_BASE_URL: 'http://campusgate.example.edu' }, 'PUBLIC_BASE_URL')
  })

  it('refuses SMTP_URL parameters that would send mail to a remote relay without TLS', () => {
    for (const query of [
      'ignoreTLS=true',
      'requireTLS=false',
      'secure=false',
      'tls.rejectUnauthorized=false',
    ]) {
      refuses({ ...PRODUCTION, SMTP_URL: `smtp://mail.example.edu:587?${query}` }, 'SMTP_URL')
    }
    // A relay on this machine may be configured freely.
    assert.equal(
      loadConfig({ SMTP_URL: 'smtp://127.0.0.1:2525?ignoreTLS=true' }).mail.smtpUrl,
      'smtp://127.0.0.1:2525?ignoreTLS=true',
    )
  })

  it('never repeats the SMTP password in its message', () => {
    assert.throws(
      () => loadConfig({ SMTP_URL: 'smtp://user:hunter2@mail.example.edu?ignoreTLS=1' }),
      (error: unknown) => error instanceof ConfigError && !error.message.includes('hunter2'),
    )
  })
})

describe('loadConfig: DATA_ENCRYPTION_KEY', () => {
  it('reads a comma list of 32-byte keys, the first one first', () => {
    const config = loadConfig({ DATA_ENCRYPTION_KEY: `${KEY_B}, ${KEY_A}` })
    assert.deepEqual(config.secrets.dataEncryptionKeys, [Buffer.alloc(32, 2), Buffer.alloc(32, 1)])
    assert.equal(loadConfig({}).secrets.dataEncryptionKeys, null)
  })

  it('refuses keys that are not base64 of exactly 32 bytes, without repeating them', () => {
    const short = Buffer.alloc(16, 7).toString('base64')
    const long = Buffer.alloc(48, 7).toString('base64')
    for (const value of [short, long, 'not-base64-at-all', `${KEY_A},${short}`, ',']) {
      refuses({ DATA_ENCRYPTION_KEY: value }, 'DATA_ENCRYPTION_KEY')
      assert.throws(
        () => loadConfig({ DATA_ENCRYPTION_KEY: value }),
        (error: unknown) => error instanceof Error && !error.message.includes(short),
      )
    }
  })
})

describe('loadConfig: TRUST_PROXY', () => {
  it("refuses true, which would trust any client's own X-Forwarded-For", () => {
    refuses({ TRUST_PROXY: 'true' }, 'TRUST_PROXY')
  })

  it('takes a hop count or proxy addresses', () => {
    assert.equal(loadConfig({ TRUST_PROXY: '2' }).server.trustProxy, 2)
    assert.equal(loadConfig({ TRUST_PROXY: '0' }).server.trustProxy, false)
    assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.0/8, ::1' }).server.trustProxy, [
      '10.0.0.0/8',
      '::1',
    ])
    refuses({ TRUST_PROXY: 'proxy.internal' }, 'TRUST_PROXY')
  })

  it("reads the header a gateway names the client in: '… via NAME'", () => {
    const server = loadConfig({ TRUST_PROXY: '1 via X-Original-Forwarded-For' }).server
    assert.equal(server.trustProxy, 1)
    assert.equal(server.clientAddressHeader, 'x-original-forwarded-for')
    const listed = loadConfig({ TRUST_PROXY: '10.0.0.0/8, ::1 VIA x-real-client' }).server
    assert.deepEqual(listed.trustProxy, ['10.0.0.0/8', '::1'])
    assert.equal(listed.clientAddressHeader, 'x-real-client')
    assert.equal(loadConfig({ TRUST_PROXY: '1' }).server.clientAddressHeader, null)
    // The header alone, with nothing trusted, or trusting everyone, or not a header name.
    refuses({ TRUST_PROXY: '0 via X-Original-Forwarded-For' }, 'TRUST_PROXY')
    refuses({ TRUST_PROXY: 'true via X-Original-Forwarded-For' }, 'TRUST_PROXY')
    refuses({ TRUST_PROXY: '1 via X-Client(IP)' }, 'TRUST_PROXY')
    refuses({ TRUST_PROXY: 'via X-Original-Forwarded-For' }, 'TRUST_PROXY')
  })
})

describe('loadConfig: durations and numbers are bounded', () => {
  for (const [variable, value] of [
    ['SESSION_TTL', '999999999d'],
    ['SESSION_TTL', '3651d'],
    ['SESSION_TOUCH_INTERVAL', '999999999d'],
    ['REGISTRATION_CODE_TTL', '999999999d'],
    ['UNIVERSITY_ATTEMPT_TTL', '999999999d'],
    ['RATE_LIMIT_WINDOW', '999999999d'],
    ['REQUEST_TIMEOUT', '999999999d'],
    ['REQUEST_TIMEOUT', '0s'],
    ['RATE_LIMIT_PER_ADDRESS', '1e12'],
    ['RATE_LIMIT_PER_SESSION', '-1'],
    ['RATE_LIMIT_REGISTRATION_PER_ADDRESS', '9999999999999'],
    ['RATE_LIMIT_CONSOLE_SIGN_IN_PER_ADDRESS', '-1'],
    ['TRUST_PROXY', '99'],
  ] as const) {
    it(`refuses ${variable}=${value}`, () => refuses({ [variable]: value }, variable))
  }

  it('reads the rate limits and the request timeout, 0 turning a limit off', () => {
    const config = loadConfig({
      RATE_LIMIT_WINDOW: '10s',
      RATE_LIMIT_PER_ADDRESS: '0',
      RATE_LIMIT_REGISTRATION_PER_ADDRESS: '5',
      RATE_LIMIT_PER_SESSION: '7',
      RATE_LIMIT_CONSOLE_SIGN_IN_PER_ADDRESS: '3',
      REQUEST_TIMEOUT: '2s',
    })
    assert.deepEqual(config.rateLimit, {
      windowMs: 10_000,
      globalMax: 0,
      sensitiveMax: 5,
      perSessionMax: 7,
      consoleSignInMax: 3,
    })
    assert.equal(config.server.requestTimeoutMs, 2000)
    const defaults = loadConfig({})
    assert.deepEqual(defaults.rateLimit, {
      windowMs: 60_000,
      globalMax: 1000,
      sensitiveMax: 100,
      perSessionMax: 600,
      consoleSignInMax: 10,
    })
    assert.equal(defaults.server.requestTimeoutMs, 30_000)
  })
})

describe('loadConfig: webhooks (WEBHOOK_URL, WEBHOOK_SECRET, WEBHOOK_RETRY_FOR)', () => {
  const SECRET_A = `whsec_${Buffer.alloc(32, 3).toString('base64')}`
  const SECRET_B = `whsec_${Buffer.alloc(24, 4).toString('base64')}`

  it('is off by default, with three days of retries', () => {
    const { webhook } = loadConfig({})
    assert.deepEqual(webhook.endpoints, [])
    assert.deepEqual(webhook.secrets, [])
    assert.equal(webhook.retryForMs, 3 * 86_400_000)
    assert.equal(webhook.tryTimeoutMs, 10_000)
  })

  it('reads comma lists of endpoints and secrets, and the retry window', () => {
    const { webhook } = loadConfig({
      WEBHOOK_URL: 'https://forum.example/hooks, http://127.0.0.1:8080/hooks',
      WEBHOOK_SECRET: `${SECRET_A},${SECRET_B}`,
      WEBHOOK_RETRY_FOR: '12h',
    })
    assert.deepEqual(webhook.endpoints, [
      'https://forum.example/hooks',
      'http://127.0.0.1:8080/hooks',
    ])
    assert.deepEqual(webhook.secrets, [SECRET_A, SECRET_B])
    assert.equal(webhook.retryForMs, 12 * 3_600_000)
  })

  it('refuses WEBHOOK_URL without WEBHOOK_SECRET, naming WEBHOOK_SECRET', () => {
    refuses({ WEBHOOK_URL: 'https://forum.example/hooks' }, 'WEBHOOK_SECRET')
  })

  it('refuses bad endpoints, naming WEBHOOK_URL', () => {
    for (const url of [
      'forum.example/hooks',
      'ftp://forum.example/hooks',
      'https://user:pass@forum.example/hooks',
      'https://a.example/h,https://a.example/h',
    ]) {
      refuses({ WEBHOOK_URL: url, WEBHOOK_SECRET: SECRET_A }, 'WEBHOOK_URL')
    }
  })

  it('refuses secrets that are not whsec_ and base64 of 24 to 64 bytes, without repeating them', () => {
    for (const secret of [
      'not-a-secret',
      Buffer.alloc(32, 3).toString('base64'),
      `whsec_${Buffer.alloc(16, 3).toString('base64')}`,
      `whsec_${Buffer.alloc(65, 3).toString('base64')}`,
      'whsec_!!!!',
      `${SECRET_A},whsec_`,
    ]) {
      refuses(
        { WEBHOOK_URL: 'https://forum.example/hooks', WEBHOOK_SECRET: secret },
        'WEBHOOK_SECRET',
      )
      assert.throws(
        () => loadConfig({ WEBHOOK_URL: 'https://f.example/h', WEBHOOK_SECRET: secret }),
        (error: Error) => !error.message.includes(SECRET_A.slice(6)),
      )
    }
  })

  it('refuses a WEBHOOK_RETRY_FOR that is not a duration of at most 30 days', () => {
    for (const value of ['forever', '31d', '0s']) {
      refuses({ WEBHOOK_RETRY_FOR: value }, 'WEBHOOK_RETRY_FOR')
    }
  })

  it('in production, wants https: endpoints unless on loopback', () => {
    refuses(
      { ...PRODUCTION, WEBHOOK_URL: 'http://forum.example/hooks', WEBHOOK_SECRET: SECRET_A },
      'WEBHOOK_URL',
    )
    const { webhook } = loadConfig({
      ...PRODUCTION,
      WEBHOOK_URL: 'https://forum.example/hooks,http://localhost:9000/h,http://[::1]:9000/h',
      WEBHOOK_SECRET: SECRET_A,
    })
    assert.equal(webhook.endpoints.length, 3)
  })
})

describe('loadConfig: secrets from files (NAME_FILE)', () => {
  /** `work` with a directory for the secret files, removed after. */
  function withFiles(work: (file: (name: string, text: string) => string) => void): void {
    const dir = mkdtempSync(join(tmpdir(), 'campusgate-secrets-'))
    try {
      work((name, text) => {
        const path = join(dir, name)
        writeFileSync(path, text)
        return path
      })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }

  it('reads every secret of production from its file, one trailing newline dropped', () => {
    withFiles((file) => {
      const config = loadConfig({
        ...PRODUCTION,
        DATABASE_URL: undefined,
        DATABASE_URL_FILE: file('db', 'postgres://campusgate:pw@db.example.edu/campusgate\n'),
        SMTP_URL: undefined,
        SMTP_URL_FILE: file('smtp', 'smtps://u:p@mail.example.edu:465\n'),
        DATA_ENCRYPTION_KEY: undefined,
        DATA_ENCRYPTION_KEY_FILE: file('key', `${KEY_B}\n`),
        MESSENGER_APP_SECRETS: undefined,
        MESSENGER_APP_SECRETS_FILE: file('apps', 'wx-app:from-a-file\n'),
        UNIVERSITY_CLIENT_SECRET: undefined,
        UNIVERSITY_CLIENT_SECRET_FILE: file('client', 'client secret from a file\r\n'),
        METRICS_TOKEN_FILE: file('metrics', 'metrics-token-from-a-file'),
        REDIS_URL_FILE: file('redis', 'redis://:pw@redis.example.edu:6379/0\n'),
        BACKEND_CREDENTIALS_FILE: file('backends', 'forum:forum-secret-from-a-file\n'),
      })
      assert.equal(config.database.url, 'postgres://campusgate:pw@db.example.edu/campusgate')
      assert.equal(config.mail.smtpUrl, 'smtps://u:p@mail.example.edu:465')
      assert.deepEqual(config.secrets.dataEncryptionKeys, [Buffer.alloc(32, 2)])
      assert.deepEqual([...config.messenger.appSecrets.values()], ['from-a-file'])
      assert.equal(config.university.clientSecret, 'client secret from a file')
      assert.equal(config.operations.metricsToken, 'metrics-token-from-a-file')
      assert.equal(config.database.redisUrl, 'redis://:pw@redis.example.edu:6379/0')
      assert.deepEqual([...config.backends.credentials.keys()], ['forum'])
    })
  })

  it('refuses a secret given both ways, naming both variables, for every secret', () => {
    withFiles((file) => {
      const path = file('secret', 'from a file\n')
      for (const name of SECRET_VARIABLES) {
        assert.throws(
          () => loadConfig({ [name]: 'in the environment', [`${name}_FILE`]: path }),
          (error: unknown) =>
            error instanceof ConfigError &&
            error.problems.includes(
              `${name}: ${name} and ${name}_FILE are both set; set one of them`,
            ),
          name,
        )
      }
    })
  })

  it('refuses a file it cannot read, naming NAME_FILE and the path', () => {
    refuses(
      { WEBHOOK_SECRET_FILE: '/nonexistent/campusgate/webhook-secret' },
      'WEBHOOK_SECRET_FILE',
    )
    assert.throws(
      () => loadConfig({ WEBHOOK_SECRET_FILE: '/nonexistent/campusgate/webhook-secret' }),
      /WEBHOOK_SECRET_FILE: cannot read "\/nonexistent\/campusgate\/webhook-secret" \(ENOENT\)/,
    )
  })
})
