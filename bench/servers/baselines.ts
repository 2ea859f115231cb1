// The baselines campusgate is measured against, each in its own process like campusgate:
//   bare    GET /session answers a fixed {openId, tier, expiresAt}: Fastify alone
//   sqlite  the raw lookup: SHA-256 of the key, one prepared better-sqlite3 SELECT (the same joins
//           campusgate runs); POST /register: the raw INSERTs of a registration (a person, their
//           identity, a session), one transaction
//   keycheck the raw lookup on a schema built for the key check (seed.ts `seedKeyCheckSqlite`):
//           SHA-256 of the key as a 32-byte BLOB, primary key of a WITHOUT ROWID sessions table,
//           an integer join to users
//   pg      the raw lookup as one named (server-side prepared) statement on a pg pool of 10
// Logging is configured as campusgate configures it by default.
// Usage: node --import tsx bench/servers/baselines.ts bare|sqlite|keycheck|pg  (PORT, DATABASE)
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import SQLite from 'better-sqlite3'
import Fastify from 'fastify'
import pg from 'pg'
import { loadDist } from '../harness/dist.js'

const mode = process.argv[2]
// Logging exactly as campusgate's defaults: its logger options and request line, its LOG_LEVEL.
const { requestLog, config } = await loadDist()
const defaultLogLevel = config.loadConfig({}).operations.logLevel
const port = Number(process.env.PORT)
const database = process.env.DATABASE ?? ''

// The same joins as campusgate's key check (docs/identities.md, "The key check"): the session, its
// messenger identity by primary key, the person's university identity by its unique index.
const LOOKUP = `SELECT s.id, s.user_id, s.expires_at, s.touched_at, m.subject AS open_id,
    u.linked_at AS university_linked_at
  FROM sessions s INNER JOIN identities m ON m.id = s.identity_id
    LEFT JOIN identities u ON u.user_id = s.user_id AND u.kind = 'university'
  WHERE s.key_hash = `

interface Row {
  expires_at: number | string
  open_id: string
  university_linked_at: number | string | null
}

const app = Fastify(requestLog.requestLogging(defaultLogLevel))
requestLog.logCompletedRequests(app)

function hash(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex')
}

function answer(row: Row | undefined): object | null {
  if (row === undefined || Number(row.expires_at) <= Date.now()) return null
  return {
    openId: row.open_id,
    tier: row.university_linked_at === null ? 'messenger-registered' : 'university-registered',
    expiresAt: new Date(Number(row.expires_at)).toISOString(),
  }
}

if (mode === 'bare') {
  const expiresAt = new Date(Date.now() + 30 * 86_400_000).toISOString()
  app.get('/session', async () => ({ openId: 'o-bench', tier: 'messenger-registered', expiresAt }))
} else if (mode === 'sqlite') {
  const db = new SQLite(database)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  const lookup = db.prepare<[string], Row>(`${LOOKUP}?`)
  app.get('/session', async (request, reply) => {
    const found = answer(lookup.get(hash(request.headers.authorization ?? '')))
    return found ?? reply.code(401).send({ error: 'invalid_session_key' })
  })
  const insertUser = db.prepare(`INSERT INTO users (id, created_at, updated_at) VALUES (?, ?, ?)`)
  const insertIdentity = db.prepare(
    `INSERT INTO identities (id, user_id, kind, provider, realm, subject, created_at, updated_at)
     VALUES (?, ?, 'messenger', 'wechat', 'wx-bench-app', ?, ?, ?)`,
  )
  const insertSession = db.prepare(
    `INSERT INTO sessions (id, user_id, identity_id, key_hash, created_at, expires_at, touched_at)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  )
  const register = db.transaction((userId: string, keyHash: string, now: number) => {
    const identityId = randomUUID()
    insertUser.run(userId, now, now)
    insertIdentity.run(identityId, userId, `raw-${userId}`, now, now)
    insertSession.run(randomUUID(), userId, identityId, keyHash, now, now + 30 * 86_400_000, now)
  })
  app.post('/register', async () => {
    const key = randomBytes(32).toString('base64url')
    register(randomUUID(), hash(key), Date.now())
    return { sessionKey: key }
  })
} else if (mode === 'keycheck') {
  const db = new SQLite(database)
  const lookup = db.prepare<[Buffer], Row>(
    `SELECT s.user_id, s.expires_at, s.touched_at, u.open_id, u.university_linked_at
     FROM sessions s INNER JOIN users u ON u.id = s.user_id WHERE s.key_hash = ?`,
  )
  app.get('/session', async (request, reply) => {
    const key = createHash('sha256')
      .update(request.headers.authorization ?? '', 'utf8')
      .digest()
    return answer(lookup.get(key)) ?? reply.code(401).send({ error: 'invalid_session_key' })
  })
} else if (mode === 'pg') {
  const pool = new pg.Pool({ connectionString: database, max: 10 })
  const text = `${LOOKUP}$1`
  app.get('/session', async (request, reply) => {
    const values = [hash(request.headers.authorization ?? '')]
    const { rows } = await pool.query<Row>({ name: 'bench-session-lookup', text, values })
    return answer(rows[0]) ?? reply.code(401).send({ error: 'invalid_session_key' })
  })
} else {
  throw new Error(`unknown mode ${mode}`)
}

await app.listen({ port, host: '127.0.0.1' })
// A clean exit on the harness's SIGTERM, so `node --cpu-prof` writes its profile.
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)))
