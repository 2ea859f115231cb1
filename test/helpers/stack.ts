import assert from 'node:assert/strict'
import type { FastifyInstance } from 'fastify'
import { createSandboxServer, SANDBOX_APP } from '../../src/sandbox/routes.js'
import { TestClock } from './clock.js'
import { call, startService, type RunningService, type ServiceOptions } from './service.js'
import { personRowOrThrow, userIdOf, type PersonRow } from './people.js'
import { linkIn, startSmtpSink, type SmtpSink } from './smtp-sink.js'

export const CLIENT_ID = 'campusgate-test-client'
export const CLIENT_SECRET = 'campusgate-test-secret-0123456789'

/**
 * campusgate wired as in production: the messenger platform and identity provider are a
 * separate HTTP server on loopback (the sandbox, speaking the real wire protocols) and mail goes
 * to a real SMTP server on loopback.
 */
export interface Stack {
  service: RunningService
  providers: FastifyInstance
  providersUrl: string
  providerClock: TestClock
  smtp: SmtpSink
  close(): Promise<void>
}

/** The simulated messenger platform and identity provider as their own server on loopback. */
export interface Providers {
  server: FastifyInstance
  url: string
  clock: TestClock
  /** The environment that points campusgate at these providers. */
  env: Record<string, string>
}

/**
 * `messengerApps`: MESSENGER_APP_PLATFORMS, whose apps the providers simulate too, each on its
 * platform's own API (docs/identities.md).
 */
export async function startProviders(
  callbackUrl: () => string,
  messengerApps = '',
): Promise<Providers> {
  const clock = new TestClock(Date.now())
  const apps = new Map(
    messengerApps
      .split(',')
      .filter((item) => item !== '')
      .map((item) => item.split(':') as [string, string]),
  )
  const server = await createSandboxServer({
    messenger: true,
    messengerApps: apps,
    university: true,
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    callbackUrl,
    clock,
  })
  const url = await server.listen({ port: 0, host: '127.0.0.1' })
  return {
    server,
    url,
    clock,
    env: {
      MESSENGER_API_BASE_URL: `${url}/_sandbox/messenger`,
      QQ_API_BASE_URL: `${url}/_sandbox/messenger/qq`,
      DOUYIN_API_BASE_URL: `${url}/_sandbox/messenger/douyin`,
      UNIVERSITY_AUTHORIZE_URL: `${url}/_sandbox/university/authorise`,
      UNIVERSITY_TOKEN_URL: `${url}/_sandbox/university/token`,
      UNIVERSITY_USERINFO_URL: `${url}/_sandbox/university/user/data`,
      UNIVERSITY_CLIENT_ID: CLIENT_ID,
      UNIVERSITY_CLIENT_SECRET: CLIENT_SECRET,
    },
  }
}

export async function startStack(
  env: Record<string, string> = {},
  options: ServiceOptions = {},
): Promise<Stack> {
  const smtp = await startSmtpSink()
  let callbackUrl = 'http://127.0.0.1:1/authorize/university/callback'
  const providers = await startProviders(() => callbackUrl, env.MESSENGER_APP_PLATFORMS)
  // Many tests mail one address for many users; the caps have tests of their own.
  const uncapped = { MAIL_LIMIT_PER_USER: '1000', MAIL_LIMIT_PER_RECIPIENT: '1000' }
  const service = await startService(
    { ...providers.env, SMTP_URL: smtp.url, ...uncapped, ...env },
    options,
  )
  callbackUrl = `${service.url}/authorize/university/callback`
  return {
    service,
    providers: providers.server,
    providersUrl: providers.url,
    providerClock: providers.clock,
    smtp,
    async close() {
      await service.close()
      await providers.server.close()
      await smtp.stop()
    },
  }
}

/** Mints a login code at the simulated messenger platform. */
export async function mintLoginCode(
  stack: Stack,
  openId?: string,
): Promise<{ code: string; openId: string }> {
  const response = await fetch(`${stack.providersUrl}/_sandbox/messenger/login-codes`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(openId === undefined ? {} : { openId }),
  })
  assert.equal(response.status, 200)
  return (await response.json()) as { code: string; openId: string }
}

/** Tier 1: a fresh (or given) user registers, from a device named by `userAgent`; returns the session key. */
export async function registerMessenger(
  stack: Stack,
  openId?: string,
  userAgent?: string,
): Promise<{ sessionKey: string; openId: string }> {
  const login = await mintLoginCode(stack, openId)
  const response = await call(`${stack.service.url}/register/messenger`, {
    method: 'POST',
    ...(userAgent === undefined ? {} : { headers: { 'user-agent': userAgent } }),
    json: { appId: SANDBOX_APP.appId, appSecret: SANDBOX_APP.appSecret, code: login.code },
  })
  assert.equal(response.status, 200, response.text)
  return { sessionKey: response.body.sessionKey as string, openId: login.openId }
}

/**
 * Tier 1 from any simulated app (MESSENGER_APP_PLATFORMS): a login code of `appId` for `openId`,
 * with `unionId` (undefined: derived from the openId; null: none), registered with the app's own
 * secret. The answer as campusgate gave it.
 */
export async function registerFromApp(
  stack: Stack,
  login: { appId: string; openId?: string; unionId?: string | null; userAgent?: string },
): Promise<{ status: number; sessionKey: string; openId: string; body: Record<string, unknown> }> {
  const minted = await fetch(`${stack.providersUrl}/_sandbox/messenger/login-codes`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      appId: login.appId,
      ...(login.openId === undefined ? {} : { openId: login.openId }),
      ...(login.unionId === undefined ? {} : { unionId: login.unionId }),
    }),
  })
  assert.equal(minted.status, 200, await minted.clone().text())
  const code = (await minted.json()) as { code: string; openId: string; appSecret: string }
  const response = await call(`${stack.service.url}/register/messenger`, {
    method: 'POST',
    ...(login.userAgent === undefined ? {} : { headers: { 'user-agent': login.userAgent } }),
    json: { appId: login.appId, appSecret: code.appSecret, code: code.code },
  })
  return {
    status: response.status,
    sessionKey: String(response.body.sessionKey),
    openId: code.openId,
    body: response.body,
  }
}

/** POST /logout with the session's key: the session ends. */
export async function logout(stack: Stack, sessionKey: string): Promise<void> {
  const response = await call(`${stack.service.url}/logout`, {
    method: 'POST',
    headers: { authorization: sessionKey },
  })
  assert.equal(response.status, 200, response.text)
}

/** A campusgate and the SMTP sink its mail goes to: a Stack, or a service started by hand. */
export interface MailingService {
  service: { url: string }
  smtp: SmtpSink
}

/** POST /register/university and the confirmation link from the mail that arrives. */
export async function requestConfirmationLink(
  stack: MailingService,
  sessionKey: string,
  email: string,
): Promise<string> {
  const before = stack.smtp.messages.length
  const response = await call(`${stack.service.url}/register/university`, {
    method: 'POST',
    headers: { authorization: sessionKey },
    json: { email },
  })
  assert.equal(response.status, 200, response.text)
  const mail = await stack.smtp.waitFor(
    (m) =>
      stack.smtp.messages.indexOf(m) >= before &&
      m.to !== undefined &&
      JSON.stringify(m.to).includes(email),
  )
  return linkIn(mail)
}

/** A browser opening the emailed link: the 301 and the attempt cookie it sets. */
export async function openLink(
  link: string,
): Promise<{ status: number; location: string; cookie: string; headers: Headers }> {
  const response = await fetch(link, {
    redirect: 'manual',
    headers: { accept: 'text/html,*/*;q=0.8' },
  })
  await response.arrayBuffer()
  const setCookie = response.headers.get('set-cookie') ?? ''
  return {
    status: response.status,
    location: response.headers.get('location') ?? '',
    cookie: setCookie.split(';')[0] ?? '',
    headers: response.headers,
  }
}

/** The user presses Allow or Deny at the identity provider; returns the callback URL it sends the browser to. */
export async function decideAtProvider(
  stack: Stack,
  state: string,
  decision: 'allow' | 'deny',
  /** Who signs in: `ada`, `alan`, or by default a student of the user's own. */
  member = 'own',
): Promise<string> {
  const response = await fetch(`${stack.providersUrl}/_sandbox/university/authorise/decision`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: CLIENT_ID, state, decision, member }).toString(),
  })
  await response.arrayBuffer()
  assert.equal(response.status, 302)
  return response.headers.get('location')!
}

/**
 * Someone else redeems the authorization code of `callbackUrl` at the provider first, so
 * campusgate's own token exchange for it fails.
 */
export async function spendProviderCode(stack: Stack, callbackUrl: string): Promise<void> {
  const spent = new URL(`${stack.providersUrl}/_sandbox/university/token`)
  spent.search = new URLSearchParams({
    code: new URL(callbackUrl).searchParams.get('code')!,
    client_id: CLIENT_ID,
    client_secret: CLIENT_SECRET,
  }).toString()
  assert.equal((await fetch(spent)).status, 200)
}

/** The browser following the provider's redirect back to campusgate, with or without its cookie. */
export async function followCallback(
  callbackUrl: string,
  cookie: string | null,
  accept = 'text/html,*/*;q=0.8',
): Promise<{ status: number; text: string; headers: Headers }> {
  const headers: Record<string, string> = { accept }
  if (cookie !== null) headers.cookie = cookie
  const response = await fetch(callbackUrl, { headers, redirect: 'manual' })
  return { status: response.status, text: await response.text(), headers: response.headers }
}

/** The whole tier 2 round trip with Allow; returns the session key of a university-registered user. */
export async function registerUniversity(
  stack: Stack,
  email = 'student@example.edu',
): Promise<{ sessionKey: string; openId: string }> {
  const user = await registerMessenger(stack)
  const link = await requestConfirmationLink(stack, user.sessionKey, email)
  const opened = await openLink(link)
  assert.equal(opened.status, 301)
  const callback = await decideAtProvider(stack, user.openId, 'allow')
  const done = await followCallback(callback, opened.cookie)
  assert.equal(done.status, 200)
  assert.match(done.text, /linked/i)
  return user
}

export async function sessionOf(stack: Stack, sessionKey: string) {
  return call(`${stack.service.url}/session`, { headers: { authorization: sessionKey } })
}

/** The registration code carried by a confirmation link. */
export function codeOf(link: string): string {
  return new URL(link).searchParams.get('universityRegistrationCode') ?? ''
}

/** A Set-Cookie header split into name, value and attributes (attribute names lower-cased). */
export function parseSetCookie(header: string): {
  name: string
  value: string
  attributes: Record<string, string | true>
} {
  const [pair = '', ...rest] = header.split(';').map((part) => part.trim())
  const eq = pair.indexOf('=')
  const attributes: Record<string, string | true> = {}
  for (const part of rest) {
    const at = part.indexOf('=')
    if (at === -1) attributes[part.toLowerCase()] = true
    else attributes[part.slice(0, at).toLowerCase()] = part.slice(at + 1)
  }
  return { name: pair.slice(0, eq), value: pair.slice(eq + 1), attributes }
}

/** The statuses of a user's university attempts, oldest first. */
export async function attemptStatusesOf(stack: Stack, openId: string): Promise<string[]> {
  const db = stack.service.db.kysely
  const rows = await db
    .selectFrom('university_attempts')
    .select('university_attempts.status')
    .where('university_attempts.user_id', '=', await userIdOf(db, openId))
    .orderBy('university_attempts.created_at')
    .execute()
  return rows.map((row) => row.status)
}

/** The person as one row (people.ts), by one of their messenger openIds. */
export async function userRowOf(stack: Stack, openId: string): Promise<PersonRow> {
  return personRowOrThrow(stack.service.db.kysely, openId)
}

/** The callback URL the provider produced, with some of its query parameters replaced or removed. */
export function withParams(callbackUrl: string, changes: Record<string, string | null>): string {
  const url = new URL(callbackUrl)
  for (const [name, value] of Object.entries(changes)) {
    if (value === null) url.searchParams.delete(name)
    else url.searchParams.set(name, value)
  }
  return url.toString()
}

/**
 * A new user of the messenger platform at `messengerUrl` (by default campusgate's own sandbox)
 * who asked for tier 2: their session key and the emailed link.
 */
export async function userAskingForTier2(
  stack: MailingService,
  messengerUrl = `${stack.service.url}/_sandbox/messenger`,
): Promise<{ sessionKey: string; link: string }> {
  const login = await call(`${messengerUrl}/login-codes`, { method: 'POST' })
  const registered = await call(`${stack.service.url}/register/messenger`, {
    method: 'POST',
    json: { appId: SANDBOX_APP.appId, appSecret: SANDBOX_APP.appSecret, code: login.body.code },
  })
  assert.equal(registered.status, 200, registered.text)
  const sessionKey = registered.body.sessionKey as string
  const email = `member-${Math.random().toString(36).slice(2)}@example.edu`
  return { sessionKey, link: await requestConfirmationLink(stack, sessionKey, email) }
}
