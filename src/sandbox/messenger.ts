import { createHash, randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import type { Clock } from '../clock.js'
import { stringOrUndefined } from '../lib/coerce.js'
import { secretsEqual } from '../lib/secrets.js'

/** The sandbox's own WeChat mini-program; its credentials are public on purpose. */
export const SANDBOX_APP = { appId: 'wx-sandbox-app', appSecret: 'sandbox-app-secret' } as const

/** A simulated app: the platform it runs on and its (public) AppSecret. */
export interface SandboxApp {
  appId: string
  platform: string
  appSecret: string
}

/**
 * The apps the sandbox simulates: its own WeChat app, and every app MESSENGER_APP_PLATFORMS
 * lists, each with a public secret of its own (docs/identities.md, "In the sandbox").
 */
export function sandboxApps(appPlatforms: ReadonlyMap<string, string>): Map<string, SandboxApp> {
  const apps = new Map<string, SandboxApp>([
    [SANDBOX_APP.appId, { ...SANDBOX_APP, platform: 'wechat' }],
  ])
  for (const [appId, platform] of appPlatforms) {
    apps.set(appId, { appId, platform, appSecret: `sandbox-secret-${appId}` })
  }
  return apps
}

const LOGIN_CODE_TTL_MS = 5 * 60 * 1000
const MAX_ID_LENGTH = 128

/** How a simulated exchange ends: the person, or the platform's own refusal. */
export type SandboxExchange =
  | { openId: string; sessionKey: string; unionId: string | null }
  | { refusal: keyof typeof REFUSALS }

// WeChat's error codes and messages (QQ uses the same), and Douyin's, so clients meet the
// refusals they will meet in production.
const REFUSALS = {
  invalidAppId: { wechat: [40013, 'invalid appid'], douyin: [40015, 'bad appid'] },
  invalidSecret: { wechat: [40125, 'invalid appsecret'], douyin: [40017, 'bad secret'] },
  missingCode: { wechat: [41008, 'missing code'], douyin: [40018, 'bad code'] },
  invalidCode: { wechat: [40029, 'invalid code'], douyin: [40018, 'bad code'] },
  usedCode: { wechat: [40163, 'code been used'], douyin: [40018, 'bad code'] },
  invalidGrantType: { wechat: [40002, 'invalid grant_type'], douyin: [40018, 'bad code'] },
} as const

interface LoginCode {
  appId: string
  openId: string
  unionId: string | null
  expiresAt: number
  used: boolean
}

export interface SandboxMessenger {
  /**
   * Mints a single-use login code for `appId` (default the sandbox's own), as `wx.login()` (or
   * `qq.login()`, `tt.login()`) would hand the mini-program; null for an app it does not simulate.
   * `unionId` undefined: derived from the openId, the same for it in every app; null: none.
   */
  mintLoginCode(login: {
    appId?: string
    openId?: string
    unionId?: string | null
  }): { app: SandboxApp; code: string; openId: string; expiresAt: Date } | null
  /** The exchange of a platform's API, for `platform`'s apps only. */
  exchange(
    platform: string,
    query: { appid?: string; secret?: string; code?: string; grantType?: string | null },
  ): SandboxExchange
}

/** The simulated platforms' state: login codes in memory, gone on restart. */
export function createSandboxMessenger(
  clock: Clock,
  apps: ReadonlyMap<string, SandboxApp>,
): SandboxMessenger {
  const codes = new Map<string, LoginCode>()

  // Used codes are kept until they expire so a replay answers "code been used", not "invalid".
  function prune(now: number): void {
    for (const [code, entry] of codes) if (entry.expiresAt <= now) codes.delete(code)
  }

  return {
    mintLoginCode({ appId = SANDBOX_APP.appId, openId, unionId }) {
      const app = apps.get(appId)
      if (app === undefined) return null
      const now = clock.now().getTime()
      prune(now)
      const code = randomBytes(24).toString('base64url')
      const person = openId ?? `sandbox-${randomBytes(12).toString('base64url')}`
      const entry: LoginCode = {
        appId,
        openId: person,
        unionId: unionId === undefined ? unionIdOf(person) : unionId,
        expiresAt: now + LOGIN_CODE_TTL_MS,
        used: false,
      }
      codes.set(code, entry)
      return { app, code, openId: entry.openId, expiresAt: new Date(entry.expiresAt) }
    },

    exchange(platform, { appid, secret, code, grantType }) {
      const app = appid === undefined ? undefined : apps.get(appid)
      if (app === undefined || app.platform !== platform) return { refusal: 'invalidAppId' }
      if (!secretsEqual(secret ?? '', app.appSecret)) return { refusal: 'invalidSecret' }
      if (grantType !== null && grantType !== 'authorization_code') {
        return { refusal: 'invalidGrantType' }
      }
      if (code === undefined || code === '') return { refusal: 'missingCode' }
      const now = clock.now().getTime()
      prune(now)
      const entry = codes.get(code)
      // A code is its app's: another app's is as unknown as a made-up one.
      if (entry === undefined || entry.appId !== app.appId) return { refusal: 'invalidCode' }
      if (entry.used) return { refusal: 'usedCode' }
      entry.used = true
      return {
        openId: entry.openId,
        sessionKey: randomBytes(16).toString('base64'),
        unionId: entry.unionId,
      }
    },
  }
}

// A unionid is stable per person across a vendor's apps; deriving it keeps it stable here too.
function unionIdOf(openId: string): string {
  const digest = createHash('sha256').update(openId, 'utf8').digest('base64url')
  return `sandbox-union-${digest.slice(0, 22)}`
}

/** An optional string field of a JSON body: the value, undefined when absent, or why it is bad. */
function optionalId(
  body: Record<string, unknown>,
  name: string,
  { nullable }: { nullable: boolean },
): { value: string | null | undefined } | { error: string } {
  const given = body[name]
  if (given === undefined) return { value: undefined }
  if (given === null && nullable) return { value: null }
  if (typeof given !== 'string' || given === '' || given.length > MAX_ID_LENGTH) {
    return {
      error: `${name} must be a string of 1 to ${MAX_ID_LENGTH} characters${nullable ? ' or null' : ''}`,
    }
  }
  return { value: given }
}

/** Registers the simulated platforms' routes (under the caller's prefix, `/messenger/...`). */
export function messengerRoutes(app: FastifyInstance, messenger: SandboxMessenger): void {
  const config = { versionedMediaType: false }
  const schema = { hide: true }

  app.post('/messenger/login-codes', { config, schema }, async (request, reply) => {
    const body: unknown = request.body ?? {}
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      return reply.code(400).send({ error: 'the body must be a JSON object or empty' })
    }
    const fields = body as Record<string, unknown>
    const appId = optionalId(fields, 'appId', { nullable: false })
    const openId = optionalId(fields, 'openId', { nullable: false })
    const unionId = optionalId(fields, 'unionId', { nullable: true })
    if ('error' in appId) return reply.code(400).send({ error: appId.error })
    if ('error' in openId) return reply.code(400).send({ error: openId.error })
    if ('error' in unionId) return reply.code(400).send({ error: unionId.error })
    const minted = messenger.mintLoginCode({
      ...(appId.value == null ? {} : { appId: appId.value }),
      ...(openId.value == null ? {} : { openId: openId.value }),
      ...(unionId.value === undefined ? {} : { unionId: unionId.value }),
    })
    if (minted === null) {
      return reply.code(400).send({
        error:
          'appId is not an app the sandbox simulates (its own, or one MESSENGER_APP_PLATFORMS lists)',
      })
    }
    return {
      code: minted.code,
      openId: minted.openId,
      appId: minted.app.appId,
      appSecret: minted.app.appSecret,
      expiresInSeconds: LOGIN_CODE_TTL_MS / 1000,
    }
  })

  // WeChat's code2session, and QQ's copy of it: every outcome HTTP 200, JSON labelled text/plain.
  for (const [platform, prefix] of [
    ['wechat', '/messenger'],
    ['qq', '/messenger/qq'],
  ] as const) {
    app.get(`${prefix}/sns/jscode2session`, { config, schema }, async (request, reply) => {
      const query = request.query as Record<string, unknown>
      const answer = messenger.exchange(platform, {
        appid: stringOrUndefined(query.appid),
        secret: stringOrUndefined(query.secret),
        code: stringOrUndefined(query.js_code),
        grantType: stringOrUndefined(query.grant_type) ?? '',
      })
      const body =
        'refusal' in answer
          ? {
              errcode: REFUSALS[answer.refusal].wechat[0],
              errmsg: REFUSALS[answer.refusal].wechat[1],
            }
          : {
              openid: answer.openId,
              session_key: answer.sessionKey,
              ...(answer.unionId === null ? {} : { unionid: answer.unionId }),
            }
      return reply.code(200).type('text/plain').send(JSON.stringify(body))
    })
  }

  // Douyin's: a JSON POST, answered with err_no and data.
  app.post('/messenger/douyin/api/apps/v2/jscode2session', { config, schema }, async (request) => {
    const body = (request.body ?? {}) as Record<string, unknown>
    const answer = messenger.exchange('douyin', {
      appid: stringOrUndefined(body.appid),
      secret: stringOrUndefined(body.secret),
      code: stringOrUndefined(body.code),
      grantType: null,
    })
    if ('refusal' in answer) {
      const [errNo, errTips] = REFUSALS[answer.refusal].douyin
      return { err_no: errNo, err_tips: errTips, log_id: randomBytes(8).toString('hex'), data: {} }
    }
    return {
      err_no: 0,
      err_tips: 'success',
      log_id: randomBytes(8).toString('hex'),
      data: {
        openid: answer.openId,
        session_key: answer.sessionKey,
        anonymous_openid: '',
        ...(answer.unionId === null ? {} : { unionid: answer.unionId }),
      },
    }
  })
}
