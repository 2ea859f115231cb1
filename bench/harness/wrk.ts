// One wrk run (Debian's wrk, one thread pinned to the load core) with bench/lua/load.lua, which
// counts every answer's status and reports its figures as one JSON line.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { LOAD_CPU } from './processes.js'

export interface WrkResult {
  requests: number
  durationUs: number
  /** Answers by status; "200-null" is a 200 whose body says there is no session. */
  statuses: Record<string, number>
  errors: { connect: number; read: number; write: number; timeout: number }
  latencyUs: { p50: number; p90: number; p99: number; max: number; mean: number }
  /** Share of its core wrk itself used (sampled from /proc while it ran). */
  loadCpu: number
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
  // wrk's own CPU time, sampled until it exits (the last fifth of a second is missed).
  let cpuSeconds = 0
  const sampler = setInterval(() => {
    try {
      const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1].split(' ')
      cpuSeconds = (Number(fields[11]) + Number(fields[12])) / 100
    } catch {
      // exited between two samples
    }
  }, 200)
  const [code] = (await once(child, 'exit')) as [number | null]
  clearInterval(sampler)
  const line = stdout.split('\n').find((l) => l.startsWith('BENCH-JSON '))
  if (code !== 0 || line === undefined) {
    throw new Error(`wrk failed (exit ${code}):\n${stdout}\n${stderr}`)
  }
  const result = JSON.parse(line.slice('BENCH-JSON '.length)) as Omit<WrkResult, 'loadCpu'>
  return { ...result, loadCpu: cpuSeconds / (result.durationUs / 1e6) }
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
