import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { spawnService, waitUntilServing } from '../helpers/process.js'
import { freePort } from '../helpers/service.js'

/** Runs the service as `npm start` does, in its own working directory, with only `env`. */
const start = (env: Record<string, string>, cwd: string) => spawnService(env, { cwd })

describe('start-up', () => {
  for (const [env, variable] of [
    [{ PORT: 'eighty' }, 'PORT'],
    [{ SESSION_TTL: 'forever' }, 'SESSION_TTL'],
    [{ NODE_ENV: 'production' }, 'UNIVERSITY_AUTHORIZE_URL'],
    // One provider configured would leave the other simulated: the sandbox never fails open.
    [{ MESSENGER_API_BASE_URL: 'http://127.0.0.1:9/wechat' }, 'UNIVERSITY_AUTHORIZE_URL'],
    [
      {
        UNIVERSITY_AUTHORIZE_URL: 'http://127.0.0.1:9/authorise',
        UNIVERSITY_TOKEN_URL: 'http://127.0.0.1:9/token',
        UNIVERSITY_CLIENT_ID: 'id',
        UNIVERSITY_CLIENT_SECRET: 'secret',
      },
      'MESSENGER_API_BASE_URL',
    ],
    [
      {
        NODE_ENV: 'production',
        UNIVERSITY_AUTHORIZE_URL: 'https://idp.example/authorise',
        UNIVERSITY_TOKEN_URL: 'https://idp.example/token',
        UNIVERSITY_CLIENT_ID: 'id',
        UNIVERSITY_CLIENT_SECRET: 'secret',
      },
      'SMTP_URL',
    ],
    [{ TRUST_PROXY: 'true' }, 'TRUST_PROXY'],
    [{ NODE_ENV: 'production' }, 'DATABASE_URL'],
    [
      { METRICS_TOKEN: 'in-the-environment', METRICS_TOKEN_FILE: '/run/secrets/metrics' },
      'METRICS_TOKEN',
    ],
    [{ SESSION_TTL: '999999999d' }, 'SESSION_TTL'],
  ] as const) {
    it(`stops with a line naming ${variable}, one line a variable (${Object.keys(env).join(', ')})`, async () => {
      const cwd = mkdtempSync(join(tmpdir(), 'campusgate-start-'))
      try {
        const run = start(env, cwd)
        assert.equal(await run.exited, 1)
        const lines = run.stderr().trim().split('\n')
        for (const line of lines) {
          assert.match(line, /^campusgate: invalid configuration: [A-Z][A-Z0-9_]*: /, run.stderr())
        }
        assert.ok(
          lines.some((line) => line.startsWith(`campusgate: invalid configuration: ${variable}: `)),
          run.stderr(),
        )
      } finally {
        rmSync(cwd, { recursive: true, force: true })
      }
    })
  }

  it('serves SQLite and the sandbox by default, says how to try it, and stops on SIGTERM', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'campusgate-start-'))
    const port = await freePort()
    const run = start({ PORT: String(port) }, cwd)
    try {
      await waitUntilServing(run, `http://127.0.0.1:${port}/_sandbox/`)
      assert.match(run.stdout(), /sandbox mode/)
      assert.ok(existsSync(join(cwd, 'data', 'campusgate.db')))
      assert.equal(statSync(join(cwd, 'data', 'campusgate.db')).mode & 0o777, 0o600)
      run.child.kill('SIGTERM')
      assert.equal(await run.exited, 0)
    } finally {
      run.child.kill('SIGKILL')
      rmSync(cwd, { recursive: true, force: true })
    }
  })

  it('reads a secret from the file NAME_FILE names: /metrics wants the token written there', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'campusgate-start-'))
    const port = await freePort()
    const tokenFile = join(cwd, 'metrics-token')
    writeFileSync(tokenFile, 'token-from-a-file\n')
    const run = start({ PORT: String(port), METRICS_TOKEN_FILE: tokenFile }, cwd)
    try {
      await waitUntilServing(run, `http://127.0.0.1:${port}/healthz`)
      const without = await fetch(`http://127.0.0.1:${port}/metrics`)
      assert.equal(without.status, 401)
      const withToken = await fetch(`http://127.0.0.1:${port}/metrics`, {
        headers: { authorization: 'Bearer token-from-a-file' },
      })
      assert.equal(withToken.status, 200)
      run.child.kill('SIGTERM')
      assert.equal(await run.exited, 0)
    } finally {
      run.child.kill('SIGKILL')
      rmSync(cwd, { recursive: true, force: true })
    }
  })

  it('in production, with everything it requires, serves no sandbox', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'campusgate-start-'))
    const port = await freePort()
    const run = start(
      {
        NODE_ENV: 'production',
        DATABASE_URL: 'sqlite:./data/campusgate.db',
        PORT: String(port),
        PUBLIC_BASE_URL: 'https://campusgate.example.edu',
        SMTP_URL: 'smtp://127.0.0.1:9',
        MESSENGER_ALLOWED_APP_IDS: 'wx-app',
        MESSENGER_APP_SECRETS: 'wx-app:held-app-secret',
        DATA_ENCRYPTION_KEY: Buffer.alloc(32, 9).toString('base64'),
        UNIVERSITY_AUTHORIZE_URL: 'https://idp.example/authorise',
        UNIVERSITY_TOKEN_URL: 'https://idp.example/token',
        UNIVERSITY_CLIENT_ID: 'id',
        UNIVERSITY_CLIENT_SECRET: 'secret',
      },
      cwd,
    )
    try {
      await waitUntilServing(run, `http://127.0.0.1:${port}/openapi.json`)
      assert.doesNotMatch(run.stdout(), /sandbox mode/)
      const sandbox = await fetch(`http://127.0.0.1:${port}/_sandbox/messenger/login-codes`, {
        method: 'POST',
      })
      assert.equal(sandbox.status, 404)
      run.child.kill('SIGTERM')
      assert.equal(await run.exited, 0)
    } finally {
      run.child.kill('SIGKILL')
      rmSync(cwd, { recursive: true, force: true })
    }
  })
})

describe('a stop asked for while starting', () => {
  it('is heard before the migrations (a container stopped then: Node as PID 1 ignores an unheard signal) and ends the start with exit 0, not serving', async () => {
    const { serve } = await import('../../src/cli/serve.js')
    const { loadConfig } = await import('../../src/config.js')
    const dir = mkdtempSync(join(tmpdir(), 'campusgate-stop-early-'))
    const port = await freePort()
    try {
      const config = loadConfig({
        DATABASE_URL: `sqlite:${join(dir, 'campusgate.db')}`,
        PORT: String(port),
        LOG_LEVEL: 'silent',
      })
      const io = { out: () => undefined, err: () => undefined, interactive: false }
      const started = serve.run({ config, values: {}, env: {}, io })
      // While the migrations run, as a supervisor's SIGTERM would arrive.
      process.emit('SIGTERM', 'SIGTERM')
      assert.equal(await started, 0)
      await assert.rejects(fetch(`http://127.0.0.1:${port}/healthz`))
      assert.equal(process.listenerCount('SIGTERM'), 0, 'no listener of the start is left behind')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
