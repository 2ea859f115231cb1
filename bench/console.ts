// The operator console with 100,000 users (docs/console.md, "Speed"): a search, the users list and
// a user's page, each asked one at a time of campusgate as `npm start` runs it (dist/, its own
// process on the servers' core), on SQLite and on PostgreSQL, over a database seeded as a year of
// an association's use looks: users created over the year, a tenth of them linked to the
// university, one or two live sessions for most, the days each used its key, the audit trail and
// the lifecycle events of it all, the confirmation mail. Timed from the client, one request at a
// time (an operator waits for one page), after a few unmeasured ones; medians and p95.
// Part of `npm run bench` (its `console` scenario; BENCH_ONLY=console runs it alone), or alone:
//   npm run build && npx tsx bench/console.ts [users]
// BENCH_POSTGRES_URL as for npm run bench ("" leaves PostgreSQL out).
import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import pg from 'pg'
import type { Dist } from './harness/dist.js'
import { benchPort } from './harness/ports.js'
import { SERVER_CPU, startServer } from './harness/processes.js'
import { median } from './harness/report.js'
import { dropPostgresSchemas, schemaUrl } from './harness/seed.js'

const DAY_MS = 86_400_000

/** One page's timings on one engine. */
export interface ConsolePageTiming {
  engine: 'sqlite' | 'postgres'
  page: 'search' | 'users list' | "a user's page" | 'users CSV (every page)'
  path: string
  users: number
  /** Each measured request's time, ms. */
  timesMs: number[]
  medianMs: number
  p95Ms: number
  /** Every answer was the page (200, and the content the page must hold). */
  ok: boolean
}

/** The rows of a year of use; columns in insertion order, as arrays, for both engines. */
interface Seed {
  tables: { name: string; columns: string[]; rows: unknown[][] }[]
  /** A user with a busy history (many audit rows, events, mail and two sessions). */
  busyOpenId: string
  /** A part from the middle of a linked user's email: the search finds that user. */
  searchFor: string
}

const FIRST = ['wei', 'li', 'anna', 'james', 'min', 'olivia', 'chen', 'noah', 'yu', 'emma']
const LAST = ['zhang', 'wang', 'smith', 'liu', 'brown', 'chen', 'jones', 'huang', 'taylor', 'zhao']

/** A WeChat-like id: 28 characters. */
const idOf = (prefix: string) => `${prefix}${randomBytes(21).toString('base64url')}`

export function seedRows(dist: Dist, users: number, now: number): Seed {
  const table = (name: string, columns: string[]) => ({ name, columns, rows: [] as unknown[][] })
  const userRows = table('users', ['id', 'created_at', 'updated_at'])
  // A person and their identities (docs/identities.md): a WeChat identity each, a university one
  // for the linked.
  const identities = table('identities', [
    'id',
    'user_id',
    'kind',
    'provider',
    'realm',
    'subject',
    'union_id',
    'email',
    'name',
    'is_student',
    'linked_at',
    'created_at',
    'updated_at',
  ])
  const sessions = table('sessions', [
    'id',
    'user_id',
    'identity_id',
    'key_hash',
    'created_at',
    'expires_at',
    'touched_at',
    'expiry_floor',
    'device',
  ])
  const days = table('user_active_days', ['user_id', 'day'])
  const audit = table('audit_events', ['id', 'at', 'type', 'actor', 'user_id', 'open_id', 'ip'])
  const mail = table('mail_outbox', [
    'id',
    'recipient',
    'subject',
    'created_at',
    'expires_at',
    'next_attempt_at',
    'attempts',
    'sent_at',
    'abandoned_at',
    'user_id',
  ])
  const events = table('webhook_events', ['id', 'user_id', 'seq', 'type', 'body', 'created_at'])
  const deliveries = table('webhook_deliveries', [
    'id',
    'event_id',
    'endpoint',
    'user_id',
    'seq',
    'state',
    'attempts',
    'next_attempt_at',
    'retry_until',
    'finished_at',
  ])
  const endpoint = 'https://app.example.org/hooks/campusgate'
  const busy = Math.floor(users / 2)
  let busyOpenId = ''
  let searchFor = ''
  let auditSeq = 0
  const auditRow = (at: number, type: string, userId: string, openId: string) => {
    auditSeq += 1
    audit.rows.push([
      `${auditSeq.toString(36).padStart(10, '0')}-${dist.secrets.newId()}`,
      at,
      type,
      'api',
      userId,
      openId,
      `10.${(auditSeq >> 16) & 255}.${(auditSeq >> 8) & 255}.${auditSeq & 255}`,
    ])
  }
  for (let u = 0; u < users; u += 1) {
    const id = dist.secrets.newId()
    const openId = idOf('o')
    const created = now - 365 * DAY_MS + Math.floor((u / users) * 364 * DAY_MS)
    const linked = u % 10 === 9 || u === busy
    const first = FIRST[u % FIRST.length]
    const last = LAST[Math.floor(u / FIRST.length) % LAST.length]
    const email = `${first}.${last}.${u}@students.university.example`
    userRows.rows.push([id, created, created])
    const identityId = dist.secrets.newId()
    identities.rows.push([
      identityId,
      id,
      'messenger',
      'wechat',
      'wx-association-app',
      openId,
      u % 5 === 0 ? null : idOf('u'),
      null,
      null,
      null,
      null,
      created,
      created,
    ])
    if (linked) {
      identities.rows.push([
        dist.secrets.newId(),
        id,
        'university',
        'oidc',
        'https://login.university.example',
        `S${String(10_000_000 + u)}`,
        null,
        email,
        `${first} ${last}`.toUpperCase(),
        1,
        created + DAY_MS,
        created,
        created,
      ])
    }
    if (u === busy) busyOpenId = openId
    if (linked && searchFor === '' && u > users / 3) searchFor = `${last}.${u}@stud`
    // Most have a live session, some two devices, the rest none any more.
    const live = u % 7 === 0 ? 0 : u % 5 === 0 || u === busy ? 2 : 1
    for (let s = 0; s < live; s += 1) {
      const expires = now + (1 + ((u + s) % 28)) * DAY_MS
      sessions.rows.push([
        dist.secrets.newId(),
        id,
        identityId,
        dist.secrets.hashSecret(`${openId}-${s}`),
        created,
        expires,
        now - (u % 3) * DAY_MS,
        expires,
        s === 0 ? 'Mozilla/5.0 (iPhone) MicroMessenger/8.0' : 'Mozilla/5.0 (Windows) WindowsWechat',
      ])
    }
    // The days it used a key over the last two months.
    const activeDays = u === busy ? 60 : (u * 7) % 12
    for (let d = 0; d < activeDays; d += 1) {
      days.rows.push([id, new Date(now - ((u + d) % 60) * DAY_MS).toISOString().slice(0, 10)])
    }
    const turns = u === busy ? 120 : 1 + (u % 4)
    auditRow(created, 'registration', id, openId)
    for (let t = 1; t < turns; t += 1) {
      auditRow(created + t * 3_600_000, t % 3 === 0 ? 'logout' : 'rotation', id, openId)
    }
    if (linked) auditRow(created + DAY_MS, 'university-linked', id, openId)
    const mails = u === busy ? 60 : linked ? 1 : 0
    for (let m = 0; m < mails; m += 1) {
      const at = created + m * 60_000
      mail.rows.push([
        dist.secrets.newId(),
        email,
        'Confirm your university account',
        at,
        at + 30 * 60_000,
        at,
        1,
        m % 10 === 3 ? null : at + 5_000,
        m % 10 === 3 ? at + 30 * 60_000 : null,
        id,
      ])
    }
    const eventCount = u === busy ? 80 : 2
    for (let seq = 1; seq <= eventCount; seq += 1) {
      const eventId = dist.secrets.newId()
      const type = seq === 1 ? 'user.created' : 'session.started'
      const at = created + seq * 1000
      events.rows.push([
        eventId,
        id,
        seq,
        type,
        JSON.stringify({ type, timestamp: new Date(at).toISOString(), data: { openId } }),
        at,
      ])
      deliveries.rows.push([
        dist.secrets.newId(),
        eventId,
        endpoint,
        id,
        seq,
        'delivered',
        1,
        at,
        at + DAY_MS,
        at + 200,
      ])
    }
  }
  return {
    tables: [userRows, identities, sessions, days, audit, mail, events, deliveries],
    busyOpenId,
    searchFor,
  }
}

async function migrate(dist: Dist, url: string): Promise<void> {
  const db = dist.database.createDb(url, { poolSize: 2 })
  await dist.migrate.migrateToLatest(db)
  await db.kysely.destroy()
}

export async function seedSqlite(dist: Dist, path: string, seed: Seed): Promise<void> {
  await migrate(dist, `sqlite:${path}`)
  const db = new SQLite(path)
  db.pragma('synchronous = OFF')
  db.transaction(() => {
    for (const { name, columns, rows } of seed.tables) {
      const insert = db.prepare(
        `INSERT INTO ${name} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`,
      )
      for (const row of rows) insert.run(row)
    }
  })()
  db.exec('ANALYZE')
  db.pragma('wal_checkpoint(TRUNCATE)')
  db.close()
}

export async function seedPostgres(dist: Dist, url: string, seed: Seed): Promise<void> {
  await migrate(dist, url)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const types = new Map<string, string>(
      (
        await client.query<{ table_name: string; column_name: string; data_type: string }>(
          `SELECT table_name, column_name, data_type FROM information_schema.columns
           WHERE table_schema = current_schema()`,
        )
      ).rows.map((row) => [`${row.table_name}.${row.column_name}`, row.data_type]),
    )
    await client.query('BEGIN')
    for (const { name, columns, rows } of seed.tables) {
      // Column by column as arrays, unnested by the server: thousands of rows a statement.
      const casts = columns.map((column) => `${types.get(`${name}.${column}`) ?? 'text'}[]`)
      for (let start = 0; start < rows.length; start += 20_000) {
        const slice = rows.slice(start, start + 20_000)
        await client.query(
          `INSERT INTO ${name} (${columns.join(', ')})
           SELECT * FROM unnest(${casts.map((cast, i) => `$${i + 1}::${cast}`).join(', ')})`,
          columns.map((_, i) => slice.map((row) => row[i])),
        )
      }
    }
    await client.query('COMMIT')
    await client.query('VACUUM (FREEZE, ANALYZE)')
  } finally {
    await client.end()
  }
}

/** A console session: a link's token stored as the service stores it, then spent. */
async function signIn(dist: Dist, url: string, engine: 'sqlite' | 'postgres', base: string) {
  const token = dist.secrets.generateSecret()
  const row = [dist.secrets.newId(), dist.secrets.hashSecret(token), 'bench', 'admin', Date.now()]
  const insert = `INSERT INTO console_sign_in_tokens
    (id, token_hash, operator, role, created_at, expires_at, used_at)`
  if (engine === 'sqlite') {
    const db = new SQLite(url)
    db.prepare(`${insert} VALUES (?, ?, ?, ?, ?, ?, NULL)`).run(...row, Date.now() + 600_000)
    db.close()
  } else {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    await client.query(`${insert} VALUES ($1, $2, $3, $4, $5, $6, NULL)`, [
      ...row,
      Date.now() + 600_000,
    ])
    await client.end()
  }
  const answer = await fetch(`${base}/console/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: base },
    body: new URLSearchParams({ token }).toString(),
    redirect: 'manual',
  })
  const cookie = (answer.headers.get('set-cookie') ?? '').split(';')[0]
  if (answer.status !== 303 || cookie === '') throw new Error(`sign-in: ${answer.status}`)
  return cookie
}

/** Times `path`, one request at a time: `warm` unmeasured, then `rounds` measured. */
async function time(
  base: string,
  cookie: string,
  path: string,
  expect: (body: string) => boolean,
  warm: number,
  rounds: number,
): Promise<{ timesMs: number[]; ok: boolean }> {
  const timesMs: number[] = []
  let ok = true
  for (let round = 0; round < warm + rounds; round += 1) {
    const started = process.hrtime.bigint()
    const answer = await fetch(`${base}${path}`, { headers: { cookie }, redirect: 'manual' })
    const body = await answer.text()
    const ms = Number(process.hrtime.bigint() - started) / 1e6
    if (answer.status !== 200 || !expect(body)) ok = false
    if (round >= warm) timesMs.push(Math.round(ms * 100) / 100)
  }
  return { timesMs, ok }
}

function p95(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.95) - 1)]
}

/**
 * The console scenario: seeds `users` users on SQLite (and PostgreSQL at `postgresUrl`), starts
 * campusgate on each, and times the three pages (and the users CSV, every page, as one download).
 */
export async function measureConsole(options: {
  dist: Dist
  users: number
  postgresUrl: string | null
  rounds: number
  log: (line: string) => void
}): Promise<ConsolePageTiming[]> {
  const { dist, users, log } = options
  const dir = mkdtempSync(join(tmpdir(), 'campusgate-bench-console-'))
  const schema = `cgbench_console_${process.pid}`
  const results: ConsolePageTiming[] = []
  try {
    const started = Date.now()
    const seed = seedRows(dist, users, Date.now())
    const engines: { engine: 'sqlite' | 'postgres'; url: string; databaseUrl: string }[] = []
    const sqlitePath = join(dir, 'console.db')
    await seedSqlite(dist, sqlitePath, seed)
    engines.push({ engine: 'sqlite', url: sqlitePath, databaseUrl: `sqlite:${sqlitePath}` })
    log(`  console: ${users} users on SQLite (${Math.round((Date.now() - started) / 1000)}s)`)
    if (options.postgresUrl !== null) {
      await dropPostgresSchemas(options.postgresUrl, [schema])
      const admin = new pg.Client({ connectionString: options.postgresUrl })
      await admin.connect()
      await admin.query(`CREATE SCHEMA ${schema}`)
      await admin.end()
      const url = schemaUrl(options.postgresUrl, schema)
      await seedPostgres(dist, url, seed)
      engines.push({ engine: 'postgres', url, databaseUrl: url })
      log(`  console: ${users} users on PostgreSQL (${Math.round((Date.now() - started) / 1000)}s)`)
    }
    const userPath = `/console/users/${encodeURIComponent(seed.busyOpenId)}`
    const pages = [
      {
        page: 'search' as const,
        path: `/console/users?q=${encodeURIComponent(seed.searchFor)}`,
        expect: (body: string) => /1–1 of 1</.test(body),
      },
      {
        page: 'users list' as const,
        path: '/console/users',
        expect: (body: string) => body.includes(`1–50 of ${users}<`),
      },
      {
        page: "a user's page" as const,
        path: userPath,
        expect: (body: string) =>
          body.includes(seed.busyOpenId) && /Revoke all sessions/.test(body),
      },
      {
        page: 'users CSV (every page)' as const,
        path: '/console/users.csv',
        expect: (body: string) => body.split('\r\n').length === users + 2,
      },
    ]
    for (const { engine, url, databaseUrl } of engines) {
      const port = await benchPort()
      const cwd = join(dir, `server-${engine}`)
      mkdirSync(cwd, { recursive: true })
      const server = await startServer({
        name: `console-${engine}`,
        command: process.execPath,
        args: [join(process.cwd(), 'dist/main.js')],
        env: {
          PORT: String(port),
          HOST: '127.0.0.1',
          DATABASE_URL: databaseUrl,
          PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
          RATE_LIMIT_PER_ADDRESS: '0',
        },
        port,
        cpu: SERVER_CPU,
        cwd,
      })
      try {
        const cookie = await signIn(dist, url, engine, server.url)
        for (const { page, path, expect } of pages) {
          // The download is one long answer: fewer rounds.
          const rounds = page.startsWith('users CSV') ? Math.min(3, options.rounds) : options.rounds
          const { timesMs, ok } = await time(server.url, cookie, path, expect, 3, rounds)
          results.push({
            engine,
            page,
            path,
            users,
            timesMs,
            medianMs: median(timesMs),
            p95Ms: p95(timesMs),
            ok,
          })
          log(`  console ${engine} ${page}: median ${median(timesMs)} ms${ok ? '' : ' WRONG'}`)
        }
      } finally {
        await server.stop()
      }
    }
    return results
  } finally {
    if (options.postgresUrl !== null) await dropPostgresSchemas(options.postgresUrl, [schema])
    rmSync(dir, { recursive: true, force: true })
  }
}

/** The table `npm run bench` and this file print. */
export function consoleTable(results: ConsolePageTiming[]) {
  return results.map((r) => ({
    page: r.page,
    engine: r.engine,
    users: r.users.toLocaleString('en'),
    'median ms': r.medianMs.toFixed(1),
    'p95 ms': r.p95Ms.toFixed(1),
    answers: r.ok ? 'as expected' : 'WRONG',
  }))
}

if (process.argv[1]?.endsWith('bench/console.ts')) {
  const { loadDist } = await import('./harness/dist.js')
  const postgresUrl = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
  const results = await measureConsole({
    dist: await loadDist(),
    users: Number(process.argv[2] ?? 100_000),
    postgresUrl: postgresUrl === '' ? null : postgresUrl,
    rounds: 15,
    log: (line) => void process.stderr.write(`${line}\n`),
  })
  console.table(consoleTable(results))
  process.exit(results.every((r) => r.ok) ? 0 : 1)
}
