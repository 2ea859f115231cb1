// npm run bench: load campusgate's hot paths on SQLite and PostgreSQL in one run, so the
// figures can be compared with each other (the machine is shared; absolute numbers drift).
// Options: BENCH_SECONDS (default 5), BENCH_CONNECTIONS (default 20),
// BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test; "" skips PostgreSQL).
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import autocannon from 'autocannon'
import pg from 'pg'
import { SANDBOX_APP } from '../src/sandbox/routes.js'
import { freePort } from '../test/helpers/service.js'

const seconds = Number(process.env.BENCH_SECONDS ?? 5)
const connections = Number(process.env.BENCH_CONNECTIONS ?? 20)
const postgresUrl = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

interface Row {
  scenario: string
  database: string
  requestsPerSecond: number
  p50Ms: number
  p99Ms: number
  errors: number
}

async function startServer(
  env: Record<string, string>,
): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort()
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/server.ts'], {
    env: { PATH: process.env.PATH, PORT: String(port), LOG_LEVEL: 'error', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  const url = `http://127.0.0.1:${port}`
  for (let i = 0; i < 300; i += 1) {
    try {
      if ((await fetch(`${url}/openapi.json`)).ok) return { url, child }
    } catch {
      await new Promise((r) => setTimeout(r, 100))
    }
  }
  throw new Error('bench server did not start')
}

async function register(url: string): Promise<string> {
  const minted = (await (
    await fetch(`${url}/_sandbox/messenger/login-codes`, { method: 'POST' })
  ).json()) as {
    code: string
  }
  const response = await fetch(`${url}/register/messenger`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...SANDBOX_APP, code: minted.code }),
  })
  return ((await response.json()) as { sessionKey: string }).sessionKey
}

async function load(scenario: string, database: string, options: autocannon.Options): Promise<Row> {
  const result = await autocannon({ connections, duration: seconds, ...options })
  const errors = result.errors + result.non2xx
  const row = {
    scenario,
    database,
    requestsPerSecond: Math.round(result.requests.average),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    errors,
  }
  console.log(JSON.stringify(row))
  return row
}

async function scenarios(database: string, env: Record<string, string>): Promise<Row[]> {
  const rows: Row[] = []
  const server = await startServer(env)
  try {
    const keys = await Promise.all(Array.from({ length: 50 }, () => register(server.url)))
    rows.push(
      await load('GET /session (touch at most once a minute)', database, {
        url: `${server.url}/session`,
        setupClient: rotate(keys),
      }),
    )
    rows.push(
      await load('GET /openapi.json (no database)', database, {
        url: `${server.url}/openapi.json`,
      }),
    )
  } finally {
    server.child.kill('SIGTERM')
  }
  // The same read path when every use writes the expiry back.
  const eager = await startServer({ ...env, SESSION_TOUCH_INTERVAL: '1ms' })
  try {
    const keys = await Promise.all(Array.from({ length: 50 }, () => register(eager.url)))
    rows.push(
      await load('GET /session (touch on every use)', database, {
        url: `${eager.url}/session`,
        setupClient: rotate(keys),
      }),
    )
    rows.push(
      await load(
        'mint code + POST /register/messenger (2 requests each)',
        database,
        registration(eager.url),
      ),
    )
  } finally {
    eager.child.kill('SIGTERM')
  }
  return rows
}

/** Each autocannon client sends its own key (sessions are per user). */
function rotate(keys: string[]): (client: autocannon.Client) => void {
  let n = 0
  return (client) => {
    client.setHeaders({
      authorization: keys[n++ % keys.length],
      accept: 'application/vnd.service.v1+json',
    })
  }
}

/** Each request first mints a login code at the sandbox, as the mini-program would. */
function registration(url: string): autocannon.Options {
  return {
    url,
    requests: [
      {
        method: 'POST',
        path: '/_sandbox/messenger/login-codes',
        onResponse: (_status, body, context) => {
          ;(context as { code?: string }).code = (JSON.parse(body) as { code: string }).code
        },
      },
      {
        method: 'POST',
        path: '/register/messenger',
        headers: { 'content-type': 'application/json' },
        setupRequest: (request, context) => ({
          ...request,
          body: JSON.stringify({ ...SANDBOX_APP, code: (context as { code?: string }).code }),
        }),
      },
    ],
  }
}

const dir = mkdtempSync(join(tmpdir(), 'campusgate-bench-'))
const all: Row[] = []
try {
  all.push(...(await scenarios('sqlite', { DATABASE_URL: `sqlite:${join(dir, 'bench.db')}` })))
  if (postgresUrl !== '') {
    const schema = `cg_bench_${process.pid}`
    const admin = new pg.Client({ connectionString: postgresUrl })
    await admin.connect()
    await admin.query(`CREATE SCHEMA ${schema}`)
    try {
      const url = new URL(postgresUrl)
      url.searchParams.set('options', `-c search_path=${schema}`)
      all.push(...(await scenarios('postgres', { DATABASE_URL: url.toString() })))
    } finally {
      await admin.query(`DROP SCHEMA ${schema} CASCADE`)
      await admin.end()
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
console.log(`\n${connections} connections, ${seconds}s per scenario\n`)
console.table(all)
