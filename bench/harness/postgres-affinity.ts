// PostgreSQL on this machine runs beside the servers being measured. Left to float, its processes
// take turns on the server's core and the scenarios on PostgreSQL measure the scheduler as much as
// the service. For the run they share the load core with wrk (which uses a small part of it), and
// get their own affinity back afterwards.
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import pg from 'pg'

export interface Pinned {
  /** Puts every PostgreSQL process back on the cores it had. */
  restore(): void
}

const SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM']

const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '::1', '[::1]'])

function taskset(args: string[]): string | null {
  const result = spawnSync('taskset', args, { encoding: 'utf8' })
  return result.status === 0 ? result.stdout : null
}

/** The postmaster and every process it started (backends, writers, autovacuum). */
function processTree(postmaster: number): number[] {
  const children = spawnSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' })
  return [postmaster, ...children.stdout.split(/\s+/).filter(Boolean).map(Number)]
}

/** Field 4 of /proc/<pid>/stat: the parent; null when the process is not visible from here. */
function parentOf(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
  } catch {
    return null
  }
}

/** The postmaster: a backend's parent, read while the connection (and so the backend) lives. */
async function postmasterOf(url: string): Promise<number | null> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
    return parentOf(rows[0].pid)
  } finally {
    await client.end()
  }
}

/**
 * Pins the PostgreSQL server at `url` to `cpu`, when it runs on this machine and may be pinned;
 * otherwise says why not and leaves it as it is.
 */
export async function pinPostgres(
  url: string,
  cpu: number,
): Promise<{ pinned: Pinned | null; why: string }> {
  if (!LOCAL_HOSTS.has(new URL(url).hostname)) {
    return { pinned: null, why: 'PostgreSQL is not on this machine; left unpinned' }
  }
  const postmaster = await postmasterOf(url)
  if (postmaster === null) {
    return { pinned: null, why: 'PostgreSQL runs in another namespace; left unpinned' }
  }
  const mask = taskset(['-p', String(postmaster)])
    ?.trim()
    .split(': ')
    .pop()
  if (mask === undefined) return { pinned: null, why: 'PostgreSQL could not be pinned' }
  for (const pid of processTree(postmaster)) {
    if (taskset(['-a', '-p', '-c', String(cpu), String(pid)]) === null && pid === postmaster) {
      return { pinned: null, why: 'PostgreSQL could not be pinned (permission)' }
    }
  }
  const restore = (): void => {
    for (const signal of SIGNALS) process.off(signal, onSignal)
    for (const pid of processTree(postmaster)) taskset(['-a', '-p', mask, String(pid)])
  }
  // A bench stopped with Ctrl-C or killed must not leave PostgreSQL on one core.
  const onSignal = (signal: NodeJS.Signals): void => {
    restore()
    process.kill(process.pid, signal)
  }
  for (const signal of SIGNALS) process.once(signal, onSignal)
  return {
    pinned: { restore },
    why: `PostgreSQL (postmaster ${postmaster}) pinned to core ${cpu}, with wrk`,
  }
}
