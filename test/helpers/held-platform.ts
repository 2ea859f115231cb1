// A messenger platform on loopback that can hold code2session answers, and the environment of
// `npm start` against it: what the tests that stop the service mid-request share
// (test/http/shutdown.test.ts, test/http/process-faults.test.ts).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { TestDatabase } from './database.js'
import { call } from './service.js'

const APP = { appId: 'wx-app', appSecret: 'app-secret-value' }

/**
 * A messenger platform on loopback: code2session answers `o-<code>` as the openId at once, except
 * for codes starting with `hold-`, whose answers wait until the test releases them.
 */
export interface Platform {
  url: string
  /** Resolves once a held request has arrived. */
  held(): Promise<void>
  release(): void
  close(): Promise<void>
}

export async function startPlatform(): Promise<Platform> {
  const waiting: Array<() => void> = []
  let arrived: () => void = () => {}
  let arrival = new Promise<void>((resolve) => (arrived = resolve))
  const answer = (req: IncomingMessage, res: ServerResponse): void => {
    const code = new URL(req.url ?? '/', 'http://platform').searchParams.get('js_code') ?? ''
    const send = (): void => {
      res.end(JSON.stringify({ openid: `o-${code}`, session_key: `sk-${code}` }))
    }
    if (!code.startsWith('hold-')) {
      send()
      return
    }
    waiting.push(send)
    arrived()
  }
  const server: Server = createServer(answer)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    held: () => arrival,
    release() {
      for (const send of waiting.splice(0)) send()
      arrival = new Promise<void>((resolve) => (arrived = resolve))
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/** The environment of `npm start` against the platform, one database and one SMTP port. */
export function serviceEnv(
  port: number,
  database: TestDatabase,
  platform: Platform,
  smtpPort: number,
): Record<string, string> {
  return {
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    DATABASE_URL: database.url,
    DATA_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    MESSENGER_API_BASE_URL: platform.url,
    UNIVERSITY_AUTHORIZE_URL: 'http://127.0.0.1:9/authorise',
    UNIVERSITY_TOKEN_URL: 'http://127.0.0.1:9/token',
    UNIVERSITY_CLIENT_ID: 'id',
    UNIVERSITY_CLIENT_SECRET: 'secret',
    SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
    // The load comes from one address.
    RATE_LIMIT_PER_ADDRESS: '0',
    RATE_LIMIT_REGISTRATION_PER_ADDRESS: '0',
    MAIL_LIMIT_PER_USER: '1000',
    LOG_LEVEL: 'info',
  }
}

export async function register(base: string, code: string) {
  return call(`${base}/register/messenger`, { method: 'POST', json: { ...APP, code } })
}
