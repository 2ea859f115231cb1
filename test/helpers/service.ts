import { once } from 'node:events'
import { createServer, type AddressInfo } from 'node:net'
import { PassThrough } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import { buildApp, type Campusgate } from '../../src/app.js'
import { loadConfig, type Config } from '../../src/config.js'
import { createDb, type Db } from '../../src/db/database.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import { cipherFor } from '../../src/secrets-at-rest.js'
import { freshDatabase } from './database.js'
import { TestClock } from './clock.js'

export const MEDIA_TYPE = 'application/vnd.service.v1+json'

export interface RunningService extends Campusgate {
  url: string
  config: Config
  db: Db
  clock: TestClock
  /** Every log line the service wrote so far. */
  logs(): string
  close(): Promise<void>
}

export interface ServiceOptions {
  /** Adjusts what the environment cannot set (rate limits). */
  tweak?: (config: Config) => Config
  /** Adds routes before the server starts, as the app's other features do. */
  extend?: (app: FastifyInstance) => void
  /** The service's clock (default: a TestClock at 2026-01-01). */
  clock?: TestClock
}

/**
 * Starts the real app on 127.0.0.1 with a fresh SQLite file, configured through the same
 * environment variables `npm start` reads.
 */
export async function startService(
  env: Record<string, string> = {},
  options: ServiceOptions = {},
): Promise<RunningService> {
  const database = await freshDatabase()
  // The links the service mails name its own address, so the port is chosen before start.
  const port = env.PORT ?? String(await freePort())
  const loaded = loadConfig({
    PORT: port,
    LOG_LEVEL: 'info',
    DATABASE_URL: database.url,
    ...env,
  })
  const config = options.tweak ? options.tweak(loaded) : loaded
  const db = createDb(config.database.url, { poolSize: config.database.poolSize })
  await migrateToLatest(db)
  const clock = options.clock ?? new TestClock()
  const logStream = new PassThrough()
  let logText = ''
  logStream.on('data', (chunk: Buffer) => (logText += chunk.toString('utf8')))
  const { cipher } = cipherFor(config)
  const service = await buildApp({ config, db, clock, logStream, cipher })
  options.extend?.(service.app)
  const url = await service.app.listen({ port: config.server.port, host: '127.0.0.1' })
  return {
    ...service,
    url,
    config,
    db,
    clock,
    logs: () => logText,
    async close() {
      await service.app.close()
      await db.kysely.destroy()
      await database.drop()
    },
  }
}

/** For load from one address: the per-address rate limits lifted, everything else as configured. */
export const WITHOUT_ADDRESS_LIMITS: ServiceOptions = {
  tweak: (config) => ({
    ...config,
    rateLimit: { ...config.rateLimit, globalMax: 1_000_000, sensitiveMax: 1_000_000 },
  }),
}

export type { FastifyInstance }

/** A port nothing listens on right now. */
export async function freePort(): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** JSON body and the headers the tests look at. */
export async function call(
  url: string,
  init: RequestInit & { json?: unknown } = {},
): Promise<{ status: number; headers: Headers; body: any; text: string }> {
  const headers = new Headers(init.headers)
  let body = init.body
  if (init.json !== undefined) {
    headers.set('content-type', 'application/json')
    body = JSON.stringify(init.json)
  }
  if (!headers.has('accept')) headers.set('accept', MEDIA_TYPE)
  const response = await fetch(url, { ...init, headers, body, redirect: 'manual' })
  const text = await response.text()
  let parsed: unknown = undefined
  try {
    parsed = text === '' ? undefined : JSON.parse(text)
  } catch {
    parsed = undefined
  }
  return { status: response.status, headers: response.headers, body: parsed, text }
}
