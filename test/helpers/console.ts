import assert from 'node:assert/strict'
import { PassThrough } from 'node:stream'
import { buildApp, type Campusgate } from '../../src/app.js'
import { runCli } from '../../src/cli/run.js'
import type { Config } from '../../src/config/types.js'
import { createDb } from '../../src/db/database.js'
import { cipherFor } from '../../src/secrets-at-rest.js'
import { parseSetCookie } from './stack.js'
import type { RunningService } from './service.js'

/** Runs `campusgate …` in this process against the service's database; stdout, stderr, code. */
export async function campusgate(
  service: RunningService,
  ...argv: string[]
): Promise<{ code: number | null; out: string; err: string }> {
  let out = ''
  let err = ''
  const code = await runCli(
    argv,
    {
      DATABASE_URL: service.config.database.url,
      PUBLIC_BASE_URL: service.config.server.publicBaseUrl,
      DATA_ENCRYPTION_KEY: process.env.DATA_ENCRYPTION_KEY ?? TEST_KEY,
      LOG_LEVEL: 'warn',
    },
    { out: (text) => (out += text), err: (text) => (err += text), interactive: false },
    'help',
  )
  return { code, out, err }
}

/** The key the console tests' services and commands share (the CLI reads what the app wrote). */
export const TEST_KEY = Buffer.alloc(32, 7).toString('base64')

/** `campusgate console link --name NAME [--role ROLE]`: the printed address and its token. */
export async function consoleLink(
  service: RunningService,
  name = 'alice',
  role: 'admin' | 'viewer' | null = null,
): Promise<{ address: string; token: string }> {
  const run = await campusgate(
    service,
    'console',
    'link',
    '--name',
    name,
    ...(role === null ? [] : ['--role', role]),
  )
  assert.equal(run.code, 0, run.err)
  const address = run.out.trim()
  const token = address.split('#token=')[1] ?? ''
  return { address, token }
}

/** POSTs a form; no redirect followed. */
export async function postForm(
  url: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; text: string }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual',
  })
  return { status: response.status, headers: response.headers, text: await response.text() }
}

/** GET with the console cookie; no redirect followed. */
export async function getPage(
  url: string,
  cookie: string | null,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; text: string }> {
  const response = await fetch(url, {
    headers: { ...(cookie === null ? {} : { cookie }), ...headers },
    redirect: 'manual',
  })
  return { status: response.status, headers: response.headers, text: await response.text() }
}

export interface SignedIn {
  /** `name=value`, as the browser sends it back. */
  cookie: string
  setCookie: ReturnType<typeof parseSetCookie>
  /** The CSRF token of the pages this session sees. */
  csrf: string
}

/** The sign-in page's POST of a link's token, from the page itself (same origin). */
export function postSignIn(
  service: { url: string; config?: { server: { publicBaseUrl: string } } },
  fields: Record<string, string>,
  headers: Record<string, string> = {},
) {
  return postForm(`${service.url}/console/sign-in`, fields, {
    origin: new URL(service.config?.server.publicBaseUrl ?? service.url).origin,
    ...headers,
  })
}

/** The sign-in page's question before it offers the button: whom `token` signs in as (JSON). */
export function describeLink(
  service: { url: string; config?: { server: { publicBaseUrl: string } } },
  token: string,
  headers: Record<string, string> = {},
  query = '',
) {
  return postForm(
    `${service.url}/console/sign-in/describe${query}`,
    { token },
    {
      origin: new URL(service.config?.server.publicBaseUrl ?? service.url).origin,
      accept: 'application/json',
      ...headers,
    },
  )
}

/** Spends a link's token as the sign-in page does, and reads the CSRF token off the overview. */
export async function signIn(
  service: { url: string; config?: { server: { publicBaseUrl: string } } },
  token: string,
): Promise<SignedIn> {
  const answer = await postSignIn(service, { token })
  assert.equal(answer.status, 303, answer.text)
  assert.equal(answer.headers.get('location'), '/console')
  const setCookie = parseSetCookie(answer.headers.get('set-cookie') ?? '')
  const cookie = `${setCookie.name}=${setCookie.value}`
  const page = await getPage(`${service.url}/console`, cookie)
  assert.equal(page.status, 200, page.text)
  return { cookie, setCookie, csrf: csrfOf(page.text) }
}

export function csrfOf(html: string): string {
  const match = /name="csrf" value="([^"]+)"/.exec(html)
  assert.ok(match, 'the page carries a CSRF token')
  return match[1]
}

/** A POST from a console page: same origin, the cookie and the CSRF token. */
export function fromConsole(
  service: { url: string },
  signedIn: SignedIn,
  path: string,
  fields: Record<string, string> = {},
  headers: Record<string, string> = {},
) {
  return postForm(
    `${service.url}${path}`,
    { csrf: signedIn.csrf, ...fields },
    { cookie: signedIn.cookie, origin: new URL(service.url).origin, ...headers },
  )
}

/** A second instance of the service on the same database, as a scaled-out deployment runs. */
export async function startSecondInstance(
  service: RunningService,
): Promise<Campusgate & { url: string; config: RunningService['config']; close(): Promise<void> }> {
  const db = createDb(service.config.database.url, { poolSize: 2 })
  const config: Config = { ...service.config, server: { ...service.config.server, port: 0 } }
  const second = await buildApp({
    config,
    db,
    clock: service.clock,
    logStream: new PassThrough(),
    cipher: cipherFor(config).cipher,
  })
  const url = await second.app.listen({ port: 0, host: '127.0.0.1' })
  return {
    ...second,
    config,
    url,
    async close() {
      await second.app.close()
      await db.kysely.destroy()
    },
  }
}
