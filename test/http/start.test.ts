import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { describe, it } from 'node:test'
import { freePort } from '../helpers/service.js'

const MAIN = resolve('src/main.ts')
// Absolute, since each run has its own working directory.
const TSX = import.meta.resolve('tsx')

/** Runs the service as `npm start` does, in its own working directory, with only `env`. */
function start(env: Record<string, string>, cwd: string) {
  const child = spawn(process.execPath, ['--import', TSX, MAIN], {
    cwd,
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)))
  return { child, exited, stdout: () => stdout, stderr: () => stderr }
}

describe('start-up', () => {
  for (const [env, variable] of [
    [{ PORT: 'eighty' }, 'PORT'],
    [{ SESSION_TTL: 'forever' }, 'SESSION_TTL'],
    [{ NODE_ENV: 'production' }, 'UNIVERSITY_AUTHORIZE_URL'],
  ] as const) {
    it(`stops with one line naming ${variable} when it is invalid`, async () => {
      const cwd = mkdtempSync(join(tmpdir(), 'campusgate-start-'))
      try {
        const run = start(env, cwd)
        assert.equal(await run.exited, 1)
        const lines = run.stderr().trim().split('\n')
        assert.equal(lines.length, 1, run.stderr())
        assert.match(lines[0], new RegExp(`^campusgate: invalid configuration: ${variable}: `))
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
      let up = false
      for (let i = 0; i < 200 && !up; i += 1) {
        up = await fetch(`http://127.0.0.1:${port}/_sandbox/`).then(
          (r) => r.ok,
          () => false,
        )
        if (!up) await new Promise((r) => setTimeout(r, 50))
      }
      assert.ok(up, run.stdout() + run.stderr())
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
})
