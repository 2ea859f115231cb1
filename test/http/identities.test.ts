import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { latestAuditEvents } from '../../src/audit/store.js'
import type { AccessDocument } from '../../src/accounts/access.js'
import { call, startService } from '../helpers/service.js'
import {
  decideAtProvider,
  followCallback,
  logout,
  openLink,
  registerFromApp,
  requestConfirmationLink,
  sessionOf,
  startStack,
  type Stack,
} from '../helpers/stack.js'
import {
  newWebhookSecret,
  startWebhookReceiver,
  type WebhookReceiver,
} from '../helpers/webhook-receiver.js'

/**
 * Issue 60, one person across an association's apps and platforms (docs/identities.md): the main
 * WeChat app and a second-hand market bound to one open-platform account (one unionid per
 * person), a QQ app and a Douyin app, each simulated on its platform's own API on loopback.
 */
const APPS = 'wx-market:wechat,qq-app:qq,tt-app:douyin'
const MAIN = 'wx-sandbox-app'

const fresh = (label: string) => `${label}-${randomBytes(6).toString('hex')}`

describe('one person, several apps', () => {
  let stack: Stack
  let receiver: WebhookReceiver
  const secret = newWebhookSecret()

  before(async () => {
    receiver = await startWebhookReceiver(secret)
    stack = await startStack({
      MESSENGER_APP_PLATFORMS: APPS,
      WEBHOOK_URL: receiver.url,
      WEBHOOK_SECRET: secret,
      SESSIONS_PER_USER: '3',
    })
  })
  after(async () => {
    await stack.close()
    await receiver.close()
  })

  /** The events of the person `userId`, as `type` or `type:reason`, once they stop arriving. */
  async function eventsOf(userId: string, count: number): Promise<string[]> {
    const of = () => receiver.delivered().filter((event) => event.data.userId === userId)
    const deadline = Date.now() + 5000
    while (of().length < count && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    return of().map((event) =>
      event.data.reason === undefined ? event.type : `${event.type}:${event.data.reason}`,
    )
  }

  async function dataOf(sessionKey: string): Promise<AccessDocument> {
    const answer = await call(`${stack.service.url}/user/data`, {
      headers: { authorization: sessionKey },
    })
    assert.equal(answer.status, 200, answer.text)
    const document: unknown = answer.body
    return document as AccessDocument
  }

  async function linkUniversity(sessionKey: string, openId: string): Promise<void> {
    const link = await requestConfirmationLink(stack, sessionKey, `${openId}@example.edu`)
    const opened = await openLink(link)
    const callback = await decideAtProvider(stack, openId, 'allow')
    const done = await followCallback(callback, opened.cookie)
    assert.match(done.text, /linked/i)
  }

  it('registers from QQ and Douyin through their own login-code exchanges, naming app and platform', async () => {
    for (const [appId, platform] of [
      ['qq-app', 'qq'],
      ['tt-app', 'douyin'],
    ] as const) {
      const user = await registerFromApp(stack, { appId, openId: fresh(platform) })
      assert.equal(user.status, 200, JSON.stringify(user.body))
      const session = await sessionOf(stack, user.sessionKey)
      assert.equal(session.status, 200)
      assert.equal(session.body.openId, user.openId)
      assert.equal(session.body.appId, appId)
      assert.equal(session.body.platform, platform)
      const userId = (await dataOf(user.sessionKey)).user.id
      assert.deepEqual(await eventsOf(userId, 2), ['user.created', 'session.started'])
      const started = receiver
        .delivered()
        .find((event) => event.type === 'session.started' && event.data.openId === user.openId)
      assert.equal(started?.data.appId, appId)
      assert.equal(started?.data.platform, platform)
    }
  })

  it('a new openId whose unionid a person holds joins that person: one user, one link, one budget, one user.created', async () => {
    const unionId = fresh('union')
    const main = await registerFromApp(stack, { appId: MAIN, openId: fresh('main'), unionId })
    await linkUniversity(main.sessionKey, main.openId)
    stack.service.clock.advance(1000)
    const market = await registerFromApp(stack, {
      appId: 'wx-market',
      openId: fresh('mkt'),
      unionId,
    })
    assert.equal(market.status, 200)

    const inMarket = await sessionOf(stack, market.sessionKey)
    // The market's key speaks for the market's openId, at the person's tier.
    assert.equal(inMarket.body.openId, market.openId)
    assert.equal(inMarket.body.appId, 'wx-market')
    assert.equal(inMarket.body.tier, 'university-registered')
    const document = await dataOf(market.sessionKey)
    assert.deepEqual(
      document.identities.map((identity) => [identity.appId, identity.openId, identity.unionId]),
      [
        [MAIN, main.openId, unionId],
        ['wx-market', market.openId, unionId],
      ],
    )
    assert.equal(document.sessions.length, 2)
    const userId = document.user.id
    assert.equal((await dataOf(main.sessionKey)).user.id, userId)

    // SESSIONS_PER_USER counts the person's sessions in every app: the third and fourth keys
    // (from the main app) end the least recently used, the market's first.
    const evicted = String((await sessionOf(stack, main.sessionKey)).body.sessionId)
    stack.service.clock.advance(1000)
    await registerFromApp(stack, { appId: MAIN, openId: main.openId, unionId })
    await registerFromApp(stack, { appId: MAIN, openId: main.openId, unionId })
    assert.equal((await sessionOf(stack, main.sessionKey)).status, 401)
    // The trail names the session the cap ended, and why (issue 63).
    const rotations = (await latestAuditEvents(stack.service.db.kysely, 500, null)).filter(
      (row) => row.type === 'rotation' && row.user_id === userId,
    )
    assert.deepEqual(
      rotations.map((row) => JSON.parse(row.detail!) as unknown),
      [{ session: evicted, reason: 'SESSIONS_PER_USER reached' }],
    )
    assert.deepEqual(await eventsOf(userId, 7), [
      'user.created',
      'session.started',
      'university.linked',
      'session.started',
      'session.started',
      'session.ended:rotation',
      'session.started',
    ])
  })

  it('never merges two people behind their back: the conflict is audited, both stay', async () => {
    const shared = fresh('union')
    const first = await registerFromApp(stack, { appId: MAIN, openId: fresh('a'), unionId: shared })
    const second = await registerFromApp(stack, {
      appId: 'wx-market',
      openId: fresh('b'),
      unionId: null,
    })
    const secondId = (await dataOf(second.sessionKey)).user.id
    // The second person's openId now arrives with the first's unionid: kept apart, answered as
    // the second, the unionid stored.
    const again = await registerFromApp(stack, {
      appId: 'wx-market',
      openId: second.openId,
      unionId: shared,
    })
    assert.equal(again.status, 200)
    const after = await dataOf(again.sessionKey)
    assert.equal(after.user.id, secondId)
    assert.equal(after.identities[0]?.unionId, shared)
    assert.notEqual((await dataOf(first.sessionKey)).user.id, secondId)
    const conflicts = (await latestAuditEvents(stack.service.db.kysely, 500, null)).filter(
      (row) => row.type === 'identity-conflict' && row.open_id === second.openId,
    )
    assert.equal(conflicts.length, 1)
    assert.match(conflicts[0].detail!, new RegExp(first.openId))

    // A third openId with that unionid, now held by two people, joins neither.
    const third = await registerFromApp(stack, { appId: MAIN, openId: fresh('c'), unionId: shared })
    const thirdId = (await dataOf(third.sessionKey)).user.id
    assert.notEqual(thirdId, secondId)
    assert.notEqual(thirdId, (await dataOf(first.sessionKey)).user.id)
    const more = (await latestAuditEvents(stack.service.db.kysely, 500, null)).filter(
      (row) => row.type === 'identity-conflict' && row.open_id === third.openId,
    )
    assert.equal(more.length, 1)
  })

  it('the command line knows the person by any of their openIds, and lists every identity', async () => {
    const unionId = fresh('union')
    const main = await registerFromApp(stack, { appId: MAIN, openId: fresh('cli-m'), unionId })
    stack.service.clock.advance(1000)
    const market = await registerFromApp(stack, {
      appId: 'wx-market',
      openId: fresh('cli-k'),
      unionId,
    })
    const env = {
      PATH: process.env.PATH ?? '',
      DATABASE_URL: stack.service.config.database.url,
      MESSENGER_APP_PLATFORMS: APPS,
      LOG_LEVEL: 'warn',
    }
    const show = spawnSync(
      process.execPath,
      [resolve('bin/campusgate.js'), 'users', 'show', '--open-id', market.openId, '--json'],
      { env, encoding: 'utf8', timeout: 60_000 },
    )
    assert.equal(show.status, 0, show.stderr)
    const shown = JSON.parse(show.stdout) as {
      openId: string
      identities: { appId: string; openId: string }[]
    }
    assert.equal(shown.openId, main.openId, "the person's first openId")
    assert.deepEqual(
      shown.identities.map((identity) => [identity.appId, identity.openId]),
      [
        [MAIN, main.openId],
        ['wx-market', market.openId],
      ],
    )
  })

  it('unionid joins stay within a platform', async () => {
    const unionId = fresh('union')
    const wechat = await registerFromApp(stack, { appId: MAIN, openId: fresh('w'), unionId })
    const qq = await registerFromApp(stack, { appId: 'qq-app', openId: fresh('q'), unionId })
    assert.notEqual(
      (await dataOf(wechat.sessionKey)).user.id,
      (await dataOf(qq.sessionKey)).user.id,
    )
  })

  it(
    'a person whose seventeen openIds share one unionid registers again as themselves',
    { timeout: 30_000 },
    async () => {
      // Registration's one read takes at most sixteen holders of a unionid; the login's own
      // identity, the newest here, is found by its openId all the same (docs/identities.md).
      const unionId = fresh('union')
      const first = await registerFromApp(stack, { appId: MAIN, openId: fresh('many'), unionId })
      const person = (await dataOf(first.sessionKey)).user.id
      let newest = first
      for (let i = 1; i < 17; i += 1) {
        // Each a millisecond later: the newest identity is the one that sorts last.
        stack.service.clock.advance(1)
        newest = await registerFromApp(stack, { appId: MAIN, openId: fresh('many'), unionId })
        assert.equal(newest.status, 200)
      }
      const again = await registerFromApp(stack, { appId: MAIN, openId: newest.openId, unionId })
      assert.equal(again.status, 200)
      const data = await dataOf(again.sessionKey)
      assert.equal(data.user.id, person)
      assert.equal(data.identities.length, 17)
    },
  )

  it('the last logout nullifies every identity’s session key; erasure deletes every identity', async () => {
    const unionId = fresh('union')
    const main = await registerFromApp(stack, { appId: MAIN, openId: fresh('m'), unionId })
    const market = await registerFromApp(stack, { appId: 'wx-market', openId: fresh('k'), unionId })
    const userId = (await dataOf(main.sessionKey)).user.id
    await logout(stack, main.sessionKey)
    // Another session lives: the keys stay.
    assert.ok((await dataOf(market.sessionKey)).identities.every((one) => one.sessionKeyHeld))
    await logout(stack, market.sessionKey)
    const db = stack.service.db.kysely
    const held = await db
      .selectFrom('identities')
      .select('secret')
      .where('user_id', '=', userId)
      .execute()
    assert.equal(held.length, 2)
    assert.ok(held.every((row) => row.secret === null))

    const back = await registerFromApp(stack, {
      appId: 'wx-market',
      openId: market.openId,
      unionId,
    })
    const erased = await call(`${stack.service.url}/user`, {
      method: 'DELETE',
      headers: { authorization: back.sessionKey },
    })
    assert.equal(erased.status, 200)
    const left = await db
      .selectFrom('identities')
      .select('id')
      .where('user_id', '=', userId)
      .execute()
    assert.deepEqual(left, [])
  })

  it('answers a failing platform as it does WeChat: 401 for a refusal, 502 when unreachable', async () => {
    for (const appId of ['qq-app', 'tt-app']) {
      const refused = await call(`${stack.service.url}/register/messenger`, {
        method: 'POST',
        json: { appId, appSecret: 'wrong', code: 'unknown' },
      })
      assert.equal(refused.status, 401, refused.text)
      assert.deepEqual(refused.body, { error: '@unauthorized/failed-messenger-authentication' })
    }
  })
})

describe('identities: the platforms unreachable, and IDENTITY_LINK_BY_UNIONID=off', () => {
  it('answers 502 messenger-platform-unavailable when QQ or Douyin cannot be reached', async () => {
    const stack = await startStack({
      MESSENGER_APP_PLATFORMS: APPS,
      QQ_API_BASE_URL: 'http://127.0.0.1:9',
      DOUYIN_API_BASE_URL: 'http://127.0.0.1:9',
    })
    try {
      for (const appId of ['qq-app', 'tt-app']) {
        const answer = await call(`${stack.service.url}/register/messenger`, {
          method: 'POST',
          json: { appId, appSecret: `sandbox-secret-${appId}`, code: 'any' },
        })
        assert.equal(answer.status, 502, answer.text)
        assert.deepEqual(answer.body, { error: '@bad-gateway/messenger-platform-unavailable' })
      }
    } finally {
      await stack.close()
    }
  })

  it('off: a new openId with a known unionid is a person of its own', async () => {
    const stack = await startStack({
      MESSENGER_APP_PLATFORMS: APPS,
      IDENTITY_LINK_BY_UNIONID: 'off',
    })
    try {
      const unionId = fresh('union')
      const main = await registerFromApp(stack, { appId: MAIN, openId: fresh('m'), unionId })
      const market = await registerFromApp(stack, {
        appId: 'wx-market',
        openId: fresh('k'),
        unionId,
      })
      const ids = []
      for (const key of [main.sessionKey, market.sessionKey]) {
        const answer = await call(`${stack.service.url}/user/data`, {
          headers: { authorization: key },
        })
        ids.push((answer.body as unknown as AccessDocument).user.id)
      }
      assert.notEqual(ids[0], ids[1])
    } finally {
      await stack.close()
    }
  })
})

describe('identities: the secrets of every platform stay on the server', () => {
  it('the sandbox of npm start simulates each listed app, its public secret held for server-held', async () => {
    const service = await startService({ MESSENGER_APP_PLATFORMS: APPS })
    try {
      for (const [appId, platform] of [
        ['qq-app', 'qq'],
        ['tt-app', 'douyin'],
        ['wx-market', 'wechat'],
      ] as const) {
        const minted = await call(`${service.url}/_sandbox/messenger/login-codes`, {
          method: 'POST',
          json: { appId },
        })
        assert.equal(minted.status, 200, minted.text)
        assert.equal(minted.body.appSecret, `sandbox-secret-${appId}`)
        const registered = await call(`${service.url}/register/messenger`, {
          method: 'POST',
          json: { appId, appSecret: 'server-held', code: minted.body.code },
        })
        assert.equal(registered.status, 200, registered.text)
        const session = await call(`${service.url}/session`, {
          headers: { authorization: String(registered.body.sessionKey) },
        })
        assert.equal(session.body.platform, platform)
      }
      // An app nobody listed is not simulated: no login code for it.
      const unlisted = await call(`${service.url}/_sandbox/messenger/login-codes`, {
        method: 'POST',
        json: { appId: 'wx-unlisted' },
      })
      assert.equal(unlisted.status, 400)
    } finally {
      await service.close()
    }
  })

  it('MESSENGER_APP_SECRETS holds the secret of a QQ and a Douyin app: sent to the platform, never the client value', async () => {
    const stack = await startStack({
      MESSENGER_APP_PLATFORMS: APPS,
      MESSENGER_APP_SECRETS: 'qq-app:sandbox-secret-qq-app,tt-app:sandbox-secret-tt-app',
    })
    try {
      for (const appId of ['qq-app', 'tt-app']) {
        const minted = await fetch(`${stack.providersUrl}/_sandbox/messenger/login-codes`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ appId }),
        })
        const { code } = (await minted.json()) as { code: string }
        const registered = await call(`${stack.service.url}/register/messenger`, {
          method: 'POST',
          json: { appId, appSecret: 'a-value-the-client-made-up', code },
        })
        assert.equal(registered.status, 200, registered.text)
      }
      assert.ok(!stack.service.logs().includes('sandbox-secret-'), 'no secret in the log')
    } finally {
      await stack.close()
    }
  })
})
