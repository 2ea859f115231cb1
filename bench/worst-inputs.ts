// The worst inputs of two endpoints, at two sizes each, asked one request at a time of campusgate
// as `npm start` runs it (dist/, its own process on the servers' core), on SQLite and on
// PostgreSQL: what they cost must not grow with the input.
// - POST /introspect with a form body that repeats one field (the largest body taken is 16 KiB):
//   read in one pass, so 16 KiB costs about what 2 KiB does (docs/tier-guard.md, "POST /introspect
//   (token introspection, RFC 7662)").
// - GET /user/data for a person with a long history (audit rows and lifecycle events): past 4 MB
//   the document is paged, so a history eight times longer costs about the same
//   (docs/console.md, "Access requests").
// Part of `npm run bench` (its `worst-inputs` scenario; BENCH_ONLY=worst-inputs runs it alone).
// BENCH_POSTGRES_URL as for npm run bench ("" leaves PostgreSQL out).
import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { seedPostgres, seedSqlite } from './console.js'
import type { Dist } from './harness/dist.js'
import { benchPort } from './harness/ports.js'
import { SERVER_CPU, startServer } from './harness/processes.js'
import { median } from './harness/report.js'
import { dropPostgresSchemas, schemaUrl } from './harness/seed.js'

const DAY_MS = 86_400_000
const BACKEND = { id: 'bench', secret: 'bench-secret-0123456789abcdef' }

/** One input at one size on one engine. */
export interface WorstInputTiming {
  engine: 'sqlite' | 'postgres'
  input: 'introspect, one field repeated' | 'GET /user/data, long history'
  /** The body's bytes, or the history's rows (audit rows and events). */
  size: string
  /** The answer's bytes (the last one). */
  answerBytes: number
  timesMs: number[]
  medianMs: number
  /** Every answer was the one the rules give. */
  ok: boolean
}

/** A person with `rows` rows of history (two audit rows to one event) and a live key. */
function personWithHistory(dist: Dist, rows: number, now: number) {
  const userId = dist.secrets.newId()
  const identityId = dist.secrets.newId()
  const openId = `o${randomBytes(21).toString('base64url')}`
  const key = dist.secrets.generateSecret()
  const start = now - 365 * DAY_MS
  const audit: unknown[][] = []
  const events: unknown[][] = []
  const deliveries: unknown[][] = []
  const eventCount = Math.floor(rows / 3)
  for (let n = 0; n < rows - eventCount; n += 1) {
    const at = start + n * 60_000
    audit.push([
      `${n.toString(36).padStart(10, '0')}-${dist.secrets.newId()}`,
      at,
      n % 3 === 0 ? 'logout' : 'rotation',
      'api',
      userId,
      openId,
      '192.0.2.10',
      JSON.stringify({ reason: 'rotation', device: 'Mozilla/5.0 (iPhone) MicroMessenger/8.0' }),
    ])
  }
  for (let seq = 1; seq <= eventCount; seq += 1) {
    const id = dist.secrets.newId()
    const at = start + seq * 120_000
    const type = seq === 1 ? 'user.created' : 'session.started'
    const data = { userId, openId, sessionId: dist.secrets.newId(), expiresAt: at + 30 * DAY_MS }
    events.push([id, userId, seq, type, JSON.stringify({ type, timestamp: at, data }), at])
    deliveries.push([
      dist.secrets.newId(),
      id,
      'https://app.example.org/hooks/campusgate',
      userId,
      seq,
      'delivered',
      1,
      at,
      at + DAY_MS,
      at + 200,
    ])
  }
  return {
    key,
    rows: {
      users: [[userId, start, start]] as unknown[][],
      identities: [
        [
          identityId,
          userId,
          'messenger',
          'wechat',
          'wx-association-app',
          openId,
          null,
          null,
          null,
          null,
          null,
          start,
          start,
        ],
      ],
      sessions: [
        [
          dist.secrets.newId(),
          userId,
          identityId,
          dist.secrets.hashSecret(key),
          start,
          now + 20 * DAY_MS,
          now,
          now + 20 * DAY_MS,
          'Mozilla/5.0 (iPhone) MicroMessenger/8.0',
        ],
      ],
      audit_events: audit,
      webhook_events: events,
      webhook_deliveries: deliveries,
    },
  }
}

const COLUMNS: Record<string, string[]> = {
  users: ['id', 'created_at', 'updated_at'],
  identities: [
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
  ],
  sessions: [
    'id',
    'user_id',
    'identity_id',
    'key_hash',
    'created_at',
    'expires_at',
    'touched_at',
    'expiry_floor',
    'device',
  ],
  audit_events: ['id', 'at', 'type', 'actor', 'user_id', 'open_id', 'ip', 'detail'],
  webhook_events: ['id', 'user_id', 'seq', 'type', 'body', 'created_at'],
  webhook_deliveries: [
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
  ],
}

/** Times `ask`, one request at a time: a few unmeasured, then `rounds` measured. */
async function time(
  ask: () => Promise<Response>,
  expect: (status: number, body: string) => boolean,
  rounds: number,
): Promise<{ timesMs: number[]; ok: boolean; bytes: number }> {
  const timesMs: number[] = []
  let ok = true
  let bytes = 0
  for (let round = 0; round < 2 + rounds; round += 1) {
    const started = process.hrtime.bigint()
    const answer = await ask()
    const body = await answer.text()
    const ms = Number(process.hrtime.bigint() - started) / 1e6
    if (!expect(answer.status, body)) ok = false
    bytes = Buffer.byteLength(body)
    if (round >= 2) timesMs.push(Math.round(ms * 100) / 100)
  }
  return { timesMs, ok, bytes }
}

/**
 * The worst-inputs scenario: seeds two people with histories of `historyRows` rows (a small and a
 * large one) on SQLite (and PostgreSQL at `postgresUrl`), starts campusgate on each, and times
 * POST /introspect with 2 KiB and 16 KiB of one repeated field and GET /user/data of both people.
 */
export async function measureWorstInputs(options: {
  dist: Dist
  historyRows: readonly [number, number]
  postgresUrl: string | null
  rounds: number
  log: (line: string) => void
}): Promise<WorstInputTiming[]> {
  const { dist, log } = options
  const dir = mkdtempSync(join(tmpdir(), 'campusgate-bench-worst-'))
  const schema = `cgbench_worst_${process.pid}`
  const results: WorstInputTiming[] = []
  try {
    const now = Date.now()
    const people = options.historyRows.map((history) => ({
      history,
      ...personWithHistory(dist, history, now),
    }))
    const seed = {
      tables: Object.entries(COLUMNS).map(([name, columns]) => ({
        name,
        columns,
        rows: people.flatMap((person) => person.rows[name as keyof typeof person.rows]),
      })),
      busyOpenId: '',
      searchFor: '',
    }
    const engines: { engine: 'sqlite' | 'postgres'; databaseUrl: string }[] = []
    const sqlitePath = join(dir, 'worst.db')
    await seedSqlite(dist, sqlitePath, seed)
    engines.push({ engine: 'sqlite', databaseUrl: `sqlite:${sqlitePath}` })
    if (options.postgresUrl !== null) {
      await dropPostgresSchemas(options.postgresUrl, [schema])
      const admin = new pg.Client({ connectionString: options.postgresUrl })
      await admin.connect()
      await admin.query(`CREATE SCHEMA ${schema}`)
      await admin.end()
      const url = schemaUrl(options.postgresUrl, schema)
      await seedPostgres(dist, url, seed)
      engines.push({ engine: 'postgres', databaseUrl: url })
    }
    const basic = `Basic ${Buffer.from(`${BACKEND.id}:${BACKEND.secret}`).toString('base64')}`
    for (const { engine, databaseUrl } of engines) {
      const port = await benchPort()
      const cwd = join(dir, `server-${engine}`)
      mkdirSync(cwd, { recursive: true })
      const server = await startServer({
        name: `worst-inputs-${engine}`,
        command: process.execPath,
        args: [join(process.cwd(), 'dist/main.js')],
        env: {
          PORT: String(port),
          HOST: '127.0.0.1',
          DATABASE_URL: databaseUrl,
          PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
          BACKEND_CREDENTIALS: `${BACKEND.id}:${BACKEND.secret}`,
          RATE_LIMIT_PER_ADDRESS: '0',
          RATE_LIMIT_PER_SESSION: '0',
        },
        port,
        cpu: SERVER_CPU,
        cwd,
      })
      try {
        // A field repeated to fill the body: the answer is the RFC's invalid_request.
        for (const bytes of [2 * 1024, 16 * 1024]) {
          const body = 't&'.repeat(bytes / 2)
          const {
            timesMs,
            ok,
            bytes: answerBytes,
          } = await time(
            () =>
              fetch(`${server.url}/introspect`, {
                method: 'POST',
                headers: {
                  authorization: basic,
                  'content-type': 'application/x-www-form-urlencoded',
                },
                body,
              }),
            (status, text) => status === 400 && text === '{"error":"invalid_request"}',
            options.rounds,
          )
          const input = 'introspect, one field repeated' as const
          results.push({
            engine,
            input,
            size: `${bytes / 1024} KiB`,
            answerBytes,
            timesMs,
            medianMs: median(timesMs),
            ok,
          })
          log(`  worst inputs ${engine} ${input} ${bytes / 1024} KiB: median ${median(timesMs)} ms`)
        }
        for (const person of people) {
          const { timesMs, ok, bytes } = await time(
            () =>
              fetch(`${server.url}/user/data`, {
                headers: {
                  authorization: person.key,
                  accept: 'application/vnd.service.v1+json',
                },
              }),
            // Past 4 MB of history, a page that says where the older rest starts.
            (status, text) =>
              status === 200 &&
              Buffer.byteLength(text) < 4.5 * 1024 * 1024 &&
              (JSON.parse(text) as { next: unknown }).next !== null,
            options.rounds,
          )
          const input = 'GET /user/data, long history' as const
          results.push({
            engine,
            input,
            size: `${person.history.toLocaleString('en')} rows`,
            answerBytes: bytes,
            timesMs,
            medianMs: median(timesMs),
            ok,
          })
          log(
            `  worst inputs ${engine} ${input} ${person.history} rows: median ${median(timesMs)} ms`,
          )
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

/** The table `npm run bench` prints. */
export function worstInputsTable(results: WorstInputTiming[]) {
  return results.map((r) => ({
    input: r.input,
    size: r.size,
    engine: r.engine,
    'answer bytes': r.answerBytes.toLocaleString('en'),
    'median ms': r.medianMs.toFixed(1),
    answers: r.ok ? 'as expected' : 'WRONG',
  }))
}
