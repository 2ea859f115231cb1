// One wrk run (Debian's wrk, one thread pinned to the load core) with bench/lua/load.lua, which
// counts every answer's status and reports its figures as one JSON line.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { LOAD_CPU } from './processes.js'

export interface WrkResult {
  requests: number
  durationUs: number
  /** Answers by status; "200-null" is a 200 whose body says there is no session. */
  statuses: Record<string, number>
  errors: { connect: number; read: number; write: number; timeout: number }
  latencyUs: { p50: number; p90: number; p99: number; max: number; mean: number }
}

export interface WrkOptions {
  url: string
  seconds: number
  connections: number
  /** key=value arguments for load.lua (path, method, keys, …). */
  script: Record<string, string | number>
}

const SCRIPT = 'bench/lua/load.lua'

export async function runWrk(options: WrkOptions): Promise<WrkResult> {
  const scriptArgs = Object.entries(options.script).map(([key, value]) => `${key}=${value}`)
  const args = [
    '-c',
    String(LOAD_CPU),
    'wrk',
    '-t1',
    `-c${options.connections}`,
    `-d${options.seconds}s`,
    '--timeout',
    '10s',
    '-s',
    SCRIPT,
    options.url,
    '--',
    ...scriptArgs,
  ]
  const child = spawn('taskset', args, { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  const [code] = (await once(child, 'exit')) as [number | null]
  const line = stdout.split('\n').find((l) => l.startsWith('BENCH-JSON '))
  if (code !== 0 || line === undefined) {
    throw new Error(`wrk failed (exit ${code}):\n${stdout}\n${stderr}`)
  }
  return JSON.parse(line.slice('BENCH-JSON '.length)) as WrkResult
}

export function requestsPerSecond(result: WrkResult): number {
  return result.requests / (result.durationUs / 1e6)
}

/** Every answer had the expected status, and nothing failed at the socket. */
export function allAsExpected(result: WrkResult, expected: number): boolean {
  const { connect, read, write, timeout } = result.errors
  const right = result.statuses[String(expected)] ?? 0
  return result.requests > 0 && right === result.requests && connect + read + write + timeout === 0
}
