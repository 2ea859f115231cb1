import assert from 'node:assert/strict'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { resolve } from 'node:path'

const MAIN = resolve('src/main.ts')
// Absolute, since a run may have its own working directory.
const TSX = import.meta.resolve('tsx')

/**
 * Builds src/ into dist/ as `npm ci` does (`prepare`: scripts/build.mjs), for the tests that run
 * the installed command (bin/campusgate.js over dist/).
 */
export function buildDist(): void {
  const build = spawnSync(process.execPath, [resolve('scripts/build.mjs')], { encoding: 'utf8' })
  assert.equal(build.status, 0, build.stdout + build.stderr)
}

/** The service as its own process, as `npm start` runs it, configured only by `env`. */
export interface ServiceProcess {
  child: ChildProcess
  /** Resolves with the exit code once the process has exited. */
  exited: Promise<number | null>
  stdout(): string
  stderr(): string
}

/** Starts `src/main.ts` with only `env` (and PATH), in `cwd` when given. */
export function spawnService(
  env: Record<string, string | undefined>,
  options: { cwd?: string; args?: string[] } = {},
): ServiceProcess {
  const child = spawn(process.execPath, ['--import', TSX, MAIN, ...(options.args ?? [])], {
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)))
  return { child, exited, stdout: () => stdout, stderr: () => stderr }
}

/** Polls `url` until it answers 2xx; fails if the process exits first or after `timeoutMs`. */
export async function waitUntilServing(
  run: ServiceProcess,
  url: string,
  timeoutMs = 90_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (run.child.exitCode !== null) throw new Error(`exited: ${run.stdout()}${run.stderr()}`)
    const ok = await fetch(url).then(
      (response) => response.ok,
      () => false,
    )
    if (ok) return
    await new Promise((done) => setTimeout(done, 50))
  }
  throw new Error(`not serving ${url}: ${run.stdout()}${run.stderr()}`)
}

/** SIGTERM, then waits for the exit; the exit code. */
export async function stopProcess(run: ServiceProcess): Promise<number | null> {
  if (run.child.exitCode === null) run.child.kill('SIGTERM')
  return run.exited
}
