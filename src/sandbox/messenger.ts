import { createHash, randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import type { Clock } from '../clock.js'
import { stringOrUndefined } from '../lib/coerce.js'
import { secretsEqual } from '../lib/secrets.js'

/** The one mini-program the simulated platform knows; its credentials are public on purpose. */
export const SANDBOX_APP = { appId: 'wx-sandbox-app', appSecret: 'sandbox-app-secret' } as const

const LOGIN_CODE_TTL_MS = 5 * 60 * 1000
const MAX_OPEN_ID_LENGTH = 128

/** What WeChat's code2session answers, always with HTTP 200. */
export type Code2SessionBody =
  { openid: string; session_key: string; unionid: string } | { errcode: number; errmsg: string }

// WeChat's own error codes and messages, so clients meet the refusals they will meet in production.
const REFUSALS = {
  invalidAppId: { errcode: 40013, errmsg: 'invalid appid' },
  invalidSecret: { errcode: 40125, errmsg: 'invalid appsecret' },
  missingCode: { errcode: 41008, errmsg: 'missing code' },
  invalidCode: { errcode: 40029, errmsg: 'invalid code' },
  usedCode: { errcode: 40163, errmsg: 'code been used' },
  invalidGrantType: { errcode: 40002, errmsg: 'invalid grant_type' },
} as const

interface LoginCode {
  openId: string
  expiresAt: number
  used: boolean
}

export interface Code2SessionQuery {
  appid?: string | undefined
  secret?: string | undefined
  js_code?: string | undefined
  grant_type?: string | undefined
}

export interface SandboxMessenger {
  /** Mints a single-use login code, as `wx.login()` would hand the mini-program. */
  mintLoginCode(openId?: string): { code: string; openId: string; expiresAt: Date }
  code2session(query: Code2SessionQuery): Code2SessionBody
}

/** The simulated platform's state: login codes in memory, gone on restart. */
export function createSandboxMessenger(clock: Clock): SandboxMessenger {
  const codes = new Map<string, LoginCode>()

  // Used codes are kept until they expire so a replay answers "code been used", not "invalid".
  function prune(now: number): void {
    for (const [code, entry] of codes) if (entry.expiresAt <= now) codes.delete(code)
  }

  return {
    mintLoginCode(openId) {
      const now = clock.now().getTime()
      prune(now)
      const code = randomBytes(24).toString('base64url')
      const entry: LoginCode = {
        openId: openId ?? `sandbox-${randomBytes(12).toString('base64url')}`,
        expiresAt: now + LOGIN_CODE_TTL_MS,
        used: false,
      }
      codes.set(code, entry)
      return { code, openId: entry.openId, expiresAt: new Date(entry.expiresAt) }
    },

    code2session(query) {
      if (query.appid !== SANDBOX_APP.appId) return REFUSALS.invalidAppId
      if (!secretsEqual(query.secret ?? '', SANDBOX_APP.appSecret)) return REFUSALS.invalidSecret
      if (query.grant_type !== 'authorization_code') return REFUSALS.invalidGrantType
      if (query.js_code === undefined || query.js_code === '') return REFUSALS.missingCode
      const now = clock.now().getTime()
      prune(now)
      const entry = codes.get(query.js_code)
      if (entry === undefined) return REFUSALS.invalidCode
      if (entry.used) return REFUSALS.usedCode
      entry.used = true
      return {
        openid: entry.openId,
        session_key: randomBytes(16).toString('base64'),
        unionid: unionIdOf(entry.openId),
      }
    },
  }
}

// A union id is stable per person across a vendor's apps; deriving it keeps it stable here too.
function unionIdOf(openId: string): string {
  const digest = createHash('sha256').update(openId, 'utf8').digest('base64url')
  return `sandbox-union-${digest.slice(0, 22)}`
}

/** Registers the simulated platform's routes (under the caller's prefix, `/messenger/...`). */
export function messengerRoutes(app: FastifyInstance, messenger: SandboxMessenger): void {
  const config = { versionedMediaType: false }
  const schema = { hide: true }

  app.post('/messenger/login-codes', { config, schema }, async (request, reply) => {
    const body: unknown = request.body
    let openId: string | undefined
    if (body !== undefined && body !== null) {
      if (typeof body !== 'object' || Array.isArray(body)) {
        return reply.code(400).send({ error: 'the body must be a JSON object or empty' })
      }
      const given: unknown = (body as Record<string, unknown>).openId
      if (given !== undefined) {
        if (typeof given !== 'string' || given === '' || given.length > MAX_OPEN_ID_LENGTH) {
          return reply
            .code(400)
            .send({ error: `openId must be a string of 1 to ${MAX_OPEN_ID_LENGTH} characters` })
        }
        openId = given
      }
    }
    const minted = messenger.mintLoginCode(openId)
    return {
      code: minted.code,
      openId: minted.openId,
      appId: SANDBOX_APP.appId,
      appSecret: SANDBOX_APP.appSecret,
      expiresInSeconds: LOGIN_CODE_TTL_MS / 1000,
    }
  })

  app.get('/messenger/sns/jscode2session', { config, schema }, async (request, reply) => {
    const query = request.query as Record<string, unknown>
    const answer = messenger.code2session({
      appid: stringOrUndefined(query.appid),
      secret: stringOrUndefined(query.secret),
      js_code: stringOrUndefined(query.js_code),
      grant_type: stringOrUndefined(query.grant_type),
    })
    // WeChat answers every outcome with HTTP 200 and labels its JSON text/plain.
    return reply.code(200).type('text/plain').send(JSON.stringify(answer))
  })
}
