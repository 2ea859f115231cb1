import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import type { AccessDocument } from '../../src/accounts/access.js'
import { runCli } from '../../src/cli/run.js'
import { createDb } from '../../src/db/database.js'
import { migrateTo, migrateToLatest } from '../../src/db/migrate.js'
import { freshDatabase, tablesOf } from '../helpers/database.js'
import { call, MEDIA_TYPE } from '../helpers/service.js'
import {
  campusgate,
  consoleLink,
  fromConsole,
  getPage,
  signIn,
  TEST_KEY,
} from '../helpers/console.js'
import { userIdOf } from '../helpers/people.js'
import {
  decideAtProvider,
  followCallback,
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
 * docs/console.md, "Suspending a user", and docs/sessions.md, "Suspended people": an operator
 * suspends a person — every session of every identity ends, every registration of theirs answers
 * 403 @forbidden/user-suspended until they are restored, nothing else is deleted — from the
 * command line and from the console, audited with the operator and announced to the backends.
 */
const APPS = 'wx-market:wechat'
const MAIN = 'wx-sandbox-app'
const MARKET = 'wx-market'

const fresh = (label: string) => `${label}-${randomBytes(6).toString('hex')}`

describe('suspending and restoring a person', () => {
  let stack: Stack
  let receiver: WebhookReceiver
  const secret = newWebhookSecret()

  before(async () => {
    receiver = await startWebhookReceiver(secret)
    stack = await startStack({
      MESSENGER_APP_PLATFORMS: APPS,
      WEBHOOK_URL: receiver.url,
      WEBHOOK_SECRET: secret,
      DATA_ENCRYPTION_KEY: TEST_KEY,
    })
    // The command line runs on the real clock: the service's is brought to it (one timeline).
    stack.service.clock.advance(Date.now() - stack.service.clock.now().getTime())
  })
  after(async () => {
    await stack.close()
    await receiver.close()
  })

  /** `campusgate …` in this process, configured as the service is (webhooks included). */
  async function cli(
    ...argv: string[]
  ): Promise<{ code: number | null; out: string; err: string }> {
    let out = ''
    let err = ''
    const code = await runCli(
      argv,
      {
        DATABASE_URL: stack.service.config.database.url,
        PUBLIC_BASE_URL: stack.service.config.server.publicBaseUrl,
        DATA_ENCRYPTION_KEY: TEST_KEY,
        MESSENGER_APP_PLATFORMS: APPS,
        WEBHOOK_URL: receiver.url,
        WEBHOOK_SECRET: secret,
        LOG_LEVEL: 'warn',
      },
      { out: (text) => (out += text), err: (text) => (err += text), interactive: false },
      'help',
    )
    return { code, out, err }
  }

  /** The person's events as written (the outbox), `type` or `type:reason`, in their order. */
  async function eventsOf(userId: string): Promise<string[]> {
    const rows = await stack.service.db.kysely
      .selectFrom('webhook_events')
      .select(['type', 'body'])
      .where('user_id', '=', userId)
      .orderBy('seq')
      .execute()
    return rows.map((row) => {
      const data = (JSON.parse(row.body) as { data: { reason?: string | null } }).data
      return data.reason === undefined ? row.type : `${row.type}:${String(data.reason)}`
    })
  }

  async function trailOf(userId: string) {
    return stack.service.db.kysely
      .selectFrom('audit_events')
      .select(['type', 'actor', 'detail'])
      .where('user_id', '=', userId)
      .orderBy('at')
      .orderBy('id')
      .execute()
  }

  /** A person with two identities (the main app and the market, one unionid), linked at tier 2. */
  async function personOfTwoApps(): Promise<{
    main: { openId: string; sessionKey: string }
    market: { openId: string; sessionKey: string }
    unionId: string
    userId: string
  }> {
    const unionId = fresh('union')
    const main = await registerFromApp(stack, { appId: MAIN, openId: fresh('main'), unionId })
    assert.equal(main.status, 200)
    const link = await requestConfirmationLink(stack, main.sessionKey, `${main.openId}@example.edu`)
    const opened = await openLink(link)
    const callback = await decideAtProvider(stack, main.openId, 'allow')
    assert.equal((await followCallback(callback, opened.cookie)).status, 200)
    const market = await registerFromApp(stack, {
      appId: MARKET,
      openId: fresh('market'),
      unionId,
    })
    assert.equal(market.status, 200)
    const userId = await userIdOf(stack.service.db.kysely, main.openId)
    assert.equal(await userIdOf(stack.service.db.kysely, market.openId), userId)
    assert.equal((await sessionOf(stack, market.sessionKey)).body.tier, 'university-registered')
    return { main, market, unionId, userId }
  }

  async function dataOf(sessionKey: string): Promise<AccessDocument> {
    const answer = await call(`${stack.service.url}/user/data`, {
      headers: { authorization: sessionKey },
    })
    assert.equal(answer.status, 200, answer.text)
    return answer.body as AccessDocument
  }

  it('the command line suspends a person of two apps: every session ends, every registration of theirs is refused, nothing is deleted; restoring lets them back', async () => {
    const { main, market, unionId, userId } = await personOfTwoApps()
    const before = await eventsOf(userId)

    // Named by the market's openId: the person, whichever identity names them.
    const suspended = await cli('users', 'suspend', market.openId, '--reason', 'spam in the market')
    assert.equal(suspended.code, 0, suspended.err)
    assert.match(suspended.out, /suspended .*: ended 2 sessions/)

    // Both keys answer as ended keys do.
    const ended = await call(`${stack.service.url}/session`, {
      headers: { authorization: main.sessionKey },
    })
    assert.equal(ended.status, 401)
    assert.deepEqual(ended.body, { error: '@unauthorized/invalid-session-key' })
    assert.equal((await sessionOf(stack, market.sessionKey)).status, 401)

    // Every identity, and a new openId the unionid would join, is refused with the error body
    // every other error has; nothing is written for them.
    for (const login of [
      { appId: MAIN, openId: main.openId, unionId },
      { appId: MARKET, openId: market.openId, unionId },
      { appId: MARKET, openId: fresh('joining'), unionId },
    ]) {
      const refused = await registerFromApp(stack, login)
      assert.equal(refused.status, 403, login.openId)
      assert.deepEqual(refused.body, { error: '@forbidden/user-suspended' })
    }
    const refused = await call(`${stack.service.url}/register/messenger`, {
      method: 'POST',
      json: { appId: MAIN, appSecret: 'server-held', code: 'x' },
    })
    assert.equal(refused.headers.get('content-type'), MEDIA_TYPE)
    const identities = await stack.service.db.kysely
      .selectFrom('identities')
      .select('subject')
      .where('user_id', '=', userId)
      .where('kind', '=', 'messenger')
      .execute()
    assert.equal(identities.length, 2, 'the joining openId was not added')

    // The events, in one transaction's order: each session, the link, the suspension.
    const events = (await eventsOf(userId)).slice(before.length)
    assert.deepEqual(events, [
      'session.ended:suspended',
      'session.ended:suspended',
      'university.unlinked:suspended',
      'user.suspended:spam in the market',
    ])
    const trail = await trailOf(userId)
    const suspension = trail.filter((row) => row.type === 'suspension')
    assert.equal(suspension.length, 1)
    assert.match(suspension[0].actor, /^cli:/)
    assert.deepEqual(JSON.parse(suspension[0].detail ?? '{}'), {
      sessions: 2,
      reason: 'spam in the market',
    })

    // The command line and the access document say so, with the reason.
    const shown = await cli('users', 'show', '--open-id', main.openId, '--json')
    assert.equal(shown.code, 0, shown.err)
    const view = JSON.parse(shown.out) as { suspended: { since: string; reason: string } | null }
    assert.equal(view.suspended?.reason, 'spam in the market')
    const exported = await cli('users', 'export', main.openId)
    assert.equal(exported.code, 0, exported.err)
    const document = JSON.parse(exported.out) as AccessDocument
    assert.equal(document.user.suspended?.reason, 'spam in the market')
    assert.equal(document.identities.length, 2)
    assert.ok(document.university !== null, 'the university identity is kept')

    // Again: said, nothing changed, nothing emitted or audited.
    const rows = (await trailOf(userId)).length
    const again = await cli('users', 'suspend', main.openId, '--reason', 'twice')
    assert.equal(again.code, 0, again.err)
    assert.match(again.out, /suspended already; nothing changed/)
    assert.deepEqual((await eventsOf(userId)).slice(before.length), events)
    assert.equal((await trailOf(userId)).length, rows)

    // A reason past 500 characters is refused before anything changes.
    const long = await cli('users', 'suspend', main.openId, '--reason', 'x'.repeat(501))
    assert.equal(long.code, 2)

    const restored = await cli('users', 'restore', '--open-id', main.openId)
    assert.equal(restored.code, 0, restored.err)
    assert.match(restored.out, /restored .*: they may register again/)
    assert.equal((await eventsOf(userId)).at(-1), 'user.restored')
    const restoration = (await trailOf(userId)).filter((row) => row.type === 'restoration')
    assert.equal(restoration.length, 1)
    assert.match(restoration[0].actor, /^cli:/)

    const notSuspended = await cli('users', 'restore', market.openId)
    assert.equal(notSuspended.code, 0)
    assert.match(notSuspended.out, /is not suspended; nothing changed/)
    assert.equal((await eventsOf(userId)).filter((type) => type === 'user.restored').length, 1)

    // Registration works again, as the same person, and their history is all there.
    const back = await registerFromApp(stack, { appId: MARKET, openId: market.openId, unionId })
    assert.equal(back.status, 200, JSON.stringify(back.body))
    const data = await dataOf(back.sessionKey)
    assert.equal(data.user.id, userId)
    assert.equal(data.user.suspended, null)
    assert.equal(data.identities.length, 2)
    assert.ok(data.university !== null)
    const kinds = data.audit.map((row) => row.type)
    for (const kind of ['registration', 'university-linked', 'suspension', 'restoration']) {
      assert.ok(kinds.includes(kind), kind)
    }
    assert.ok(data.events.some((event) => event.type === 'user.suspended'))

    // Every event reached the endpoint, in the order written.
    const written = (await eventsOf(userId)).map((kind) => kind.split(':')[0])
    const deliveredOf = () =>
      receiver
        .delivered()
        .filter((event) => event.data.userId === userId)
        .map((event) => event.type)
    const deadline = Date.now() + 10_000
    while (deliveredOf().length < written.length && Date.now() < deadline) {
      // The command's events are due on the real clock: the service's follows it.
      stack.service.clock.advance(Math.max(0, Date.now() - stack.service.clock.now().getTime()))
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    assert.deepEqual(deliveredOf(), written)
  })

  it('an unknown openId: exit 3, nothing changed', async () => {
    assert.equal((await cli('users', 'suspend', fresh('nobody'))).code, 3)
    assert.equal((await cli('users', 'restore', fresh('nobody'))).code, 3)
  })

  it('an admin suspends and restores from the user page; the page and the list say suspended; a viewer has no button and is refused', async () => {
    const { main, market, userId } = await personOfTwoApps()
    const admin = await signIn(stack.service, (await consoleLink(stack.service, 'ada')).token)
    const path = `/console/users/${encodeURIComponent(main.openId)}`

    const page = await getPage(`${stack.service.url}${path}`, admin.cookie)
    assert.match(page.text, /<label for="reason">Reason for the suspension<\/label>/)
    assert.match(page.text, /<button type="submit" class="danger">Suspend user<\/button>/)
    assert.doesNotMatch(page.text, />Restore user</)

    const suspended = await fromConsole(stack.service, admin, `${path}/suspend`, {
      reason: 'harassment',
      back: path,
    })
    assert.equal(suspended.status, 303)
    assert.equal(suspended.headers.get('location'), `${path}?done=suspended&count=2`)
    assert.equal((await sessionOf(stack, market.sessionKey)).status, 401)
    const refused = await registerFromApp(stack, { appId: MARKET, openId: market.openId })
    assert.equal(refused.status, 403)
    assert.equal((await eventsOf(userId)).at(-1), 'user.suspended:harassment')
    const audited = (await trailOf(userId)).filter((row) => row.type === 'suspension')
    assert.equal(audited.length, 1)
    assert.equal(audited[0].actor, 'console:ada')

    const after = await getPage(`${stack.service.url}${path}?done=suspended&count=2`, admin.cookie)
    assert.match(after.text, /User suspended; sessions ended: 2\./)
    assert.match(after.text, /<strong class="suspended">suspended<\/strong>/)
    assert.match(after.text, /harassment/)
    assert.match(after.text, />Restore user<\/button>/)
    assert.doesNotMatch(after.text, />Suspend user</)
    const zh = await getPage(`${stack.service.url}${path}?lang=zh-CN`, admin.cookie)
    assert.match(zh.text, /已停用/)
    assert.match(zh.text, />恢复用户<\/button>/)

    const list = await getPage(
      `${stack.service.url}/console/users?q=${encodeURIComponent(main.openId)}`,
      admin.cookie,
    )
    assert.match(list.text, /<strong class="suspended">suspended<\/strong>/)

    // Again: nothing changes, and the page says so.
    const again = await fromConsole(stack.service, admin, `${path}/suspend`, { reason: 'again' })
    assert.equal(again.headers.get('location'), `${path}?done=alreadySuspended&count=0`)
    assert.equal((await trailOf(userId)).filter((row) => row.type === 'suspension').length, 1)

    // A viewer: no button, and a forged POST refused, nothing restored.
    const vera = await signIn(
      stack.service,
      (await consoleLink(stack.service, 'vera', 'viewer')).token,
    )
    const viewed = await getPage(`${stack.service.url}${path}`, vera.cookie)
    assert.match(viewed.text, /<strong class="suspended">suspended<\/strong>/)
    assert.doesNotMatch(viewed.text, /Restore user|Suspend user/)
    const forged = await fromConsole(
      stack.service,
      vera,
      `${path}/restore`,
      {},
      {
        accept: 'application/json',
      },
    )
    assert.equal(forged.status, 403)
    assert.deepEqual(JSON.parse(forged.text), { error: '@forbidden/operator-role' })
    assert.equal((await registerFromApp(stack, { appId: MAIN, openId: main.openId })).status, 403)

    const restored = await fromConsole(stack.service, admin, `${path}/restore`, { back: path })
    assert.equal(restored.headers.get('location'), `${path}?done=restored&count=1`)
    assert.equal((await eventsOf(userId)).at(-1), 'user.restored')
    assert.equal(
      (await trailOf(userId)).find((row) => row.type === 'restoration')?.actor,
      'console:ada',
    )
    assert.equal((await registerFromApp(stack, { appId: MAIN, openId: main.openId })).status, 200)
    const listed = await campusgate(stack.service, 'users', 'show', '--open-id', main.openId)
    assert.match(listed.out, /suspended {3}no/)
  })

  it('migration 0019 only adds two nullable columns to users; its way back drops them and keeps every person', async () => {
    const database = await freshDatabase()
    const db = createDb(database.url, { poolSize: 2 })
    const columns = async () =>
      (await tablesOf(db))
        .find((table) => table.name === 'users')!
        .columns.map((column) => [column.name, column.isNullable] as const)
        .filter(([name]) => name.startsWith('suspen'))
        .sort()
    try {
      await migrateTo(db, '0018_console_list_indexes')
      const at = Date.now()
      await db.kysely
        .insertInto('users')
        .values({ id: 'u-before', created_at: at, updated_at: at })
        .execute()
      assert.deepEqual(await columns(), [])
      await migrateToLatest(db)
      assert.deepEqual(await columns(), [
        ['suspended_at', true],
        ['suspension_reason', true],
      ])
      const before = await db.kysely.selectFrom('users').selectAll().executeTakeFirstOrThrow()
      assert.equal(before.suspended_at, null, 'nobody is suspended by the migration')
      await db.kysely
        .updateTable('users')
        .set({ suspended_at: at, suspension_reason: 'spam' })
        .execute()
      await migrateTo(db, '0018_console_list_indexes')
      assert.deepEqual(await columns(), [])
      const ids = await db.kysely.selectFrom('users').select('id').execute()
      assert.deepEqual(ids, [{ id: 'u-before' }])
    } finally {
      await db.kysely.destroy()
    }
  })
})
