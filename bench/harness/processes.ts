// The processes of a bench run: servers pinned to one core, the load generator to the other, and
// what /proc says about them (CPU time, resident memory).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { connect } from 'node:net'

/** The core every server runs on; wrk and the code2session server get the other. */
export const SERVER_CPU = 0
export const LOAD_CPU = 1

export interface Server {
  readonly name: string
  readonly url: string
  readonly pid: number
  /** User + system CPU seconds the process has used so far. */
  cpuSeconds(): number
  /**
   * Resident memory: in all (VmRSS, its peak VmHWM), and the process's own (RssAnon), without the
   * pages of files it maps (SQLite's memory map), which are the kernel's shared page cache.
   */
  memory(): { rssMb: number; peakRssMb: number; anonRssMb: number }
  /**
   * Stops the process (SIGSTOP) or lets it go on (SIGCONT). Idle, a campusgate still wakes about
   * a hundred times a second (its metrics' event-loop monitor, its jobs' timers): a dozen of them
   * sharing the servers' core took CPU from whichever one was being measured.
   */
  pause(): void
  resume(): void
  stop(): Promise<void>
}

export interface ServerSpec {
  name: string
  command: string
  args: string[]
  env: Record<string, string>
  port: number
  /** Which core to pin the whole process (every thread) to once it listens. */
  cpu: number
  /** Working directory (campusgate's ./data/outbox lands there); the repository by default. */
  cwd?: string
}

const TICKS_PER_SECOND = 100

function procStatus(pid: number, field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(
    readFileSync(`/proc/${pid}/status`, 'utf8'),
  )
  return match === null ? 0 : Number(match[1]) / 1024
}

async function portOpen(port: number): Promise<boolean> {
  const socket = connect(port, '127.0.0.1')
  try {
    await Promise.race([
      once(socket, 'connect'),
      new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), 1000)),
    ])
    return true
  } catch {
    return false
  } finally {
    socket.destroy()
  }
}

/** The CPU time (user and system) process `pid` has used so far, in seconds. */
export function cpuSecondsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  // Fields 14 and 15 of stat (utime, stime) are 12 and 13 after the command name.
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND
}

/** Pins every thread of a running process to one core (threads it starts later inherit it). */
export function pin(pid: number, cpu: number): void {
  const result = spawnSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)])
  if (result.status !== 0) throw new Error(`taskset failed for ${pid}: ${String(result.stderr)}`)
}

/**
 * Starts a server with its output discarded (as a log shipper would take it away), waits until
 * its port accepts connections, then pins it. Startup runs on both cores so it is quicker.
 */
export async function startServer(spec: ServerSpec): Promise<Server> {
  const child: ChildProcess = spawn(spec.command, spec.args, {
    env: { PATH: process.env.PATH ?? '', ...spec.env },
    cwd: spec.cwd ?? process.cwd(),
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)))
  let exited = false
  child.once('exit', (code, signal) => {
    exited = true
    if (!stopping) process.stderr.write(`${spec.name} exited (${code ?? signal}):\n${stderr}\n`)
  })
  let stopping = false
  const deadline = Date.now() + 120_000
  while (!(await portOpen(spec.port))) {
    if (exited || Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`${spec.name} did not start:\n${stderr}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  const pid = child.pid!
  pin(pid, spec.cpu)
  return {
    name: spec.name,
    url: `http://127.0.0.1:${spec.port}`,
    pid,
    cpuSeconds() {
      // A server that died has no /proc entry: its run then fails on its statuses, not here.
      if (exited) return 0
      return cpuSecondsOf(pid)
    },
    memory() {
      if (exited) return { rssMb: 0, peakRssMb: 0, anonRssMb: 0 }
      return {
        rssMb: procStatus(pid, 'VmRSS'),
        peakRssMb: procStatus(pid, 'VmHWM'),
        anonRssMb: procStatus(pid, 'RssAnon'),
      }
    },
    pause() {
      if (!exited) child.kill('SIGSTOP')
    },
    resume() {
      if (!exited) child.kill('SIGCONT')
    },
    async stop() {
      if (exited) return
      stopping = true
      child.kill('SIGCONT')
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
      await once(child, 'exit')
      clearTimeout(timer)
    },
  }
}
