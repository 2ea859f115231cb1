import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { describe, it } from 'node:test'
import { freePort } from '../helpers/service.js'

const MAIN = resolve('src/main.ts')
const TSX = import.meta.resolve('tsx')
// util-linux `script` gives the service a pseudo-terminal as its stdout, as a person's shell does.
const SCRIPT = '/usr/bin/script'

const SECRETS = {
  SMTP_URL: 'smtp://mailer:smtp-pass-0123456789@127.0.0.1:2525',
  UNIVERSITY_CLIENT_SECRET: 'client-secret-0123456789abcdef',
  METRICS_TOKEN: 'metrics-token-0123456789abcdef',
}

/** Starts the service as `npm start` does, waits until it serves, stops it, returns its output. */
async function runUntilUp(env: Record<string, string>, tty: boolean): Promise<string> {
  const cwd = mkdtempSync(join(tmpdir(), 'campusgate-tty-'))
  const port = await freePort()
  const command = [process.execPath, '--import', TSX, MAIN]
  const child = tty
    ? spawn(SCRIPT, ['-qfec', command.map((part) => `'${part}'`).join(' '), '/dev/null'], {
        cwd,
        env: { PATH: process.env.PATH, PORT: String(port), ...env },
        stdio: ['pipe', 'pipe', 'pipe'],
      })
    : spawn(command[0], command.slice(1), {
        cwd,
        env: { PATH: process.env.PATH, PORT: String(port), ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
  const exited = new Promise((done) => child.on('exit', done))
  try {
    let up = false
    for (let i = 0; i < 300 && !up; i += 1) {
      up = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.ok,
        () => false,
      )
      if (!up) await new Promise((r) => setTimeout(r, 50))
    }
    assert.ok(up, output)
    // The summary is written before the port answers; the log line that says so may come after
    // (on a terminal, pino-pretty's stream writes asynchronously), so wait for that line itself:
    // the summary's own "listening" row is not it.
    for (let i = 0; i < 500 && !/Server listening/.test(output); i += 1)
      await new Promise((r) => setTimeout(r, 20))
  } finally {
    child.kill('SIGTERM')
    await exited
    rmSync(cwd, { recursive: true, force: true })
  }
  return output
}

describe('a person at a terminal', { skip: !existsSync(SCRIPT) && 'no util-linux script' }, () => {
  it('sees a one-screen summary and readable log lines, secrets masked', async () => {
    const output = await runUntilUp({ ...SECRETS }, true)
    assert.match(output, /^campusgate \d+\.\d+\.\d+\r?$/m)
    assert.match(output, /^ {2}database +SQLite \.\/data\/campusgate\.db\r?$/m)
    assert.match(output, /^ {2}mail +smtp:\/\/mailer:\*\*\*\*@127\.0\.0\.1:2525/m)
    assert.match(output, /^ {2}messenger +sandbox/m)
    assert.match(output, /^ {2}rate limits +1000 per 1 min per address/m)
    assert.match(output, /^ {2}metrics +\/metrics, bearer token required/m)
    assert.match(output, /INFO.*Server listening/)
    assert.doesNotMatch(output, /^\{"level"/m, 'no JSON lines on a terminal')
    for (const secret of ['smtp-pass-0123456789', ...Object.values(SECRETS).slice(1)])
      assert.ok(!output.includes(secret), `${secret} appears in the output`)
  })

  it('gets JSON lines and no summary when stdout is not a terminal', async () => {
    const output = await runUntilUp({}, false)
    const lines = output.trim().split('\n')
    assert.ok(lines.length >= 2)
    for (const line of lines) assert.doesNotThrow(() => JSON.parse(line), line)
    assert.doesNotMatch(output, /^campusgate \d/m)
  })
})
