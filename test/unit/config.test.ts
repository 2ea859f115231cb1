import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ConfigError, loadConfig, parseDuration } from '../../src/config.js'

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

describe('loadConfig', () => {
  it('defaults to SQLite, port 3000 and both sandbox providers', () => {
    const config = loadConfig({})
    assert.equal(config.port, 3000)
    assert.equal(config.databaseUrl, 'sqlite:./data/campusgate.db')
    assert.deepEqual(config.sandbox, { messenger: true, university: true })
    assert.equal(config.publicBaseUrl, 'http://127.0.0.1:3000')
    assert.equal(config.messenger.apiBaseUrl, 'http://127.0.0.1:3000/_sandbox/messenger')
    assert.equal(config.sessionTtlMs, 30 * 86_400_000)
    assert.equal(config.sessionTouchIntervalMs, 60_000)
    assert.equal(config.registrationCodeTtlMs, 30 * 60_000)
    assert.equal(config.university.attemptTtlMs, 10 * 60_000)
    assert.ok(Object.isFrozen(config))
  })

  it('reads METRICS_TOKEN and AUDIT_RETENTION (open metrics, 90 days by default)', () => {
    assert.equal(loadConfig({}).metricsToken, null)
    assert.equal(loadConfig({}).auditRetentionMs, 90 * 86_400_000)
    const config = loadConfig({ METRICS_TOKEN: 'x'.repeat(16), AUDIT_RETENTION: '365d' })
    assert.equal(config.metricsToken, 'x'.repeat(16))
    assert.equal(config.auditRetentionMs, 365 * 86_400_000)
    assert.throws(() => loadConfig({ METRICS_TOKEN: 'short' }), /^Error: METRICS_TOKEN: /)
    assert.throws(() => loadConfig({ AUDIT_RETENTION: 'forever' }), /^Error: AUDIT_RETENTION: /)
  })

  it('caps the touch interval at a tenth of the session TTL', () => {
    assert.equal(
      loadConfig({ SESSION_TTL: '10s', SESSION_TOUCH_INTERVAL: '60s' }).sessionTouchIntervalMs,
      1000,
    )
  })

  it('keeps provider endpoints exactly as configured', () => {
    const config = loadConfig({
      UNIVERSITY_AUTHORIZE_URL: 'https://idp.example/oauth/authorise/',
      UNIVERSITY_TOKEN_URL: 'https://idp.example/oauth/token',
      UNIVERSITY_CLIENT_ID: 'id',
      UNIVERSITY_CLIENT_SECRET: 'secret',
    })
    assert.equal(config.university.authorizeUrl, 'https://idp.example/oauth/authorise/')
    assert.deepEqual(config.sandbox, { messenger: true, university: false })
  })

  for (const [env, variable] of [
    [{ PORT: 'eighty' }, 'PORT'],
    [{ SESSION_TTL: 'forever' }, 'SESSION_TTL'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ UNIVERSITY_AUTHORIZE_URL: 'https://idp.example/a' }, 'UNIVERSITY_TOKEN_URL'],
    [{ UNIVERSITY_CALLBACK_BINDING: 'ip' }, 'UNIVERSITY_CALLBACK_BINDING'],
    [{ UNIVERSITY_CALLBACK_BINDING: 'none' }, 'UNIVERSITY_CALLBACK_ALLOWED_IPS'],
    [{ UNIVERSITY_CALLBACK_ALLOWED_IPS: '10.0.0.300' }, 'UNIVERSITY_CALLBACK_ALLOWED_IPS'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ SMTP_URL: 'mail.example' }, 'SMTP_URL'],
    [{ PUBLIC_BASE_URL: 'ftp://x' }, 'PUBLIC_BASE_URL'],
    [{ NODE_ENV: 'production' }, 'UNIVERSITY_AUTHORIZE_URL'],
  ] as const) {
    it(`names ${variable} when it is wrong (${JSON.stringify(env)})`, () => {
      assert.throws(
        () => loadConfig(env),
        (error: unknown) =>
          error instanceof ConfigError &&
          error.message.startsWith(`${variable}:`) &&
          !error.message.includes('\n'),
      )
    })
  }

  it('never runs the sandbox in production', () => {
    const config = loadConfig({
      NODE_ENV: 'production',
      UNIVERSITY_AUTHORIZE_URL: 'https://idp.example/a',
      UNIVERSITY_TOKEN_URL: 'https://idp.example/t',
      UNIVERSITY_CLIENT_ID: 'id',
      UNIVERSITY_CLIENT_SECRET: 'secret',
    })
    assert.deepEqual(config.sandbox, { messenger: false, university: false })
    assert.equal(config.messenger.apiBaseUrl, 'https://api.weixin.qq.com')
  })
})
