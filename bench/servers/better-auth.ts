// better-auth (from bench/package.json, never the service's dependencies) on SQLite with an
// email/password user, seeded and served for npm run bench:
//   seed N FILE M migrates its schema, signs one user up through its API, inserts N users with one
//                 session each, and writes their cookies: FILE (session_token) and FILE.cached
//                 (session_token and the cookie cache's session_data, from its own get-session,
//                 for the first M sessions)
//   node          its documented Node handler, `toNodeHandler(auth)`, cookie cache off
//   fastify       mounted in Fastify as its docs show, with its cookie cache on (its best case)
// better-auth is imported by name at run time: the service's type check never needs it installed.
// Usage: node --import tsx bench/servers/better-auth.ts MODE …  (PORT, DATABASE)
import { createHmac, randomBytes, randomUUID } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import SQLite from 'better-sqlite3'
import Fastify from 'fastify'
import { loadDist } from '../harness/dist.js'

// The little of better-auth's API the bench uses.
interface Auth {
  handler(request: Request): Promise<Response>
  api: { signUpEmail(input: { body: object; asResponse: true }): Promise<Response> }
}
interface BetterAuthModules {
  betterAuth: (options: object) => Auth
  toNodeHandler: (auth: Auth) => (request: IncomingMessage, response: ServerResponse) => void
  getMigrations: (options: object) => Promise<{ runMigrations: () => Promise<void> }>
}

const load = (name: string): Promise<object> => import(name)
const { betterAuth, toNodeHandler, getMigrations } = Object.assign(
  {},
  ...(await Promise.all([
    load('better-auth'),
    load('better-auth/node'),
    load('better-auth/db/migration'),
  ])),
) as BetterAuthModules

const mode = process.argv[2]
// Logging exactly as campusgate's defaults: its logger options and request line, its LOG_LEVEL.
const { requestLog, config } = await loadDist()
const defaultLogLevel = config.loadConfig({}).operations.logLevel
const port = Number(process.env.PORT ?? 0)
const baseURL = `http://127.0.0.1:${port}`
const secret = 'bench-better-auth-secret-0123456789abcdefghij'
const cookieCache = mode === 'fastify' || mode === 'seed'
const db = new SQLite(process.env.DATABASE ?? '')
db.pragma('journal_mode = WAL')

const options = {
  database: db,
  secret,
  baseURL,
  emailAndPassword: { enabled: true },
  telemetry: { enabled: false },
  logger: { level: 'error' },
  // The cached session outlives the whole run so every request of the best case can use it.
  session: { cookieCache: { enabled: cookieCache, maxAge: 3600 } },
}
const auth = betterAuth(options)

/** better-call's signed cookie: value "." base64(HMAC-SHA-256(secret, value)), URI-encoded. */
function signed(token: string): string {
  const signature = createHmac('sha256', secret).update(token).digest('base64')
  return encodeURIComponent(`${token}.${signature}`)
}

async function seed(count: number, file: string, cachedCount: number): Promise<void> {
  const { runMigrations } = await getMigrations(options)
  await runMigrations()
  const email = { email: 'bench@example.com', password: 'correct horse battery', name: 'Bench' }
  const signUp = await auth.api.signUpEmail({ body: email, asResponse: true })
  if (signUp.status !== 200) throw new Error(`better-auth sign-up answered ${signUp.status}`)

  const now = new Date().toISOString()
  const expires = new Date(Date.now() + 7 * 86_400_000).toISOString()
  const user = db.prepare(
    `INSERT INTO "user" (id, name, email, emailVerified, image, createdAt, updatedAt)
     VALUES (?, ?, ?, 0, NULL, ?, ?)`,
  )
  const session = db.prepare(
    `INSERT INTO "session" (id, expiresAt, token, createdAt, updatedAt, ipAddress, userAgent, userId)
     VALUES (?, ?, ?, ?, ?, '', '', ?)`,
  )
  const tokens: string[] = []
  db.transaction(() => {
    for (let i = 0; i < count; i += 1) {
      const userId = randomUUID()
      const token = randomBytes(24).toString('base64url')
      user.run(userId, `User ${i}`, `user${i}@example.com`, now, now)
      session.run(randomUUID(), expires, token, now, now, userId)
      tokens.push(token)
    }
  })()

  const plain = tokens.map((token) => `better-auth.session_token=${signed(token)}`)
  const cached: string[] = []
  for (const cookie of plain.slice(0, cachedCount)) {
    const url = `${baseURL}/api/auth/get-session`
    const response = await auth.handler(new Request(url, { headers: { cookie } }))
    const data = /better-auth\.session_data=[^;]+/.exec(response.headers.get('set-cookie') ?? '')
    if (response.status !== 200 || data === null) throw new Error('better-auth seed: no session')
    cached.push(`${cookie}; ${data[0]}`)
  }
  writeFileSync(file, `${plain.join('\n')}\n`)
  writeFileSync(`${file}.cached`, `${cached.join('\n')}\n`)
}

if (mode === 'seed') {
  await seed(Number(process.argv[3]), process.argv[4], Number(process.argv[5]))
  process.exit(0)
} else if (mode === 'node') {
  createServer(toNodeHandler(auth)).listen(port, '127.0.0.1')
} else if (mode === 'fastify') {
  // The integration from better-auth's Fastify guide, with campusgate's default logging.
  const app = Fastify(requestLog.requestLogging(defaultLogLevel))
  requestLog.logCompletedRequests(app)
  app.route({
    method: ['GET', 'POST'],
    url: '/api/auth/*',
    async handler(request, reply) {
      const url = new URL(request.url, `http://${request.headers.host}`)
      const headers = new Headers()
      for (const [key, value] of Object.entries(request.headers)) {
        if (value !== undefined) headers.append(key, value.toString())
      }
      const body = request.body === undefined ? undefined : JSON.stringify(request.body)
      const response = await auth.handler(
        new Request(url.toString(), { method: request.method, headers, body }),
      )
      reply.status(response.status)
      response.headers.forEach((value, key) => {
        reply.header(key, value)
      })
      return reply.send(response.body === null ? null : await response.text())
    },
  })
  await app.listen({ port, host: '127.0.0.1' })
} else {
  throw new Error(`unknown mode ${mode}`)
}
