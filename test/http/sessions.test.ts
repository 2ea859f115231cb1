import assert from 'node:assert/strict'
import { userIdOf } from '../helpers/people.js'
import { after, before, describe, it } from 'node:test'
import { inTransaction } from '../../src/db/transaction.js'
import { call, MEDIA_TYPE } from '../helpers/service.js'
import {
  registerMessenger,
  registerUniversity,
  sessionOf,
  startStack,
  userRowOf,
  type Stack,
} from '../helpers/stack.js'

const MINUTE = 60_000

describe('sessions: validity, sliding extension, expiry and logout', () => {
  let stack: Stack
  before(async () => {
    // Short TTLs from configuration, as an operator would set them.
    stack = await startStack(
      { SESSION_TTL: '10m', SESSION_TOUCH_INTERVAL: '1m' },
      {
        extend: (app) => {
          app.get(
            '/forum/posts',
            { onRequest: app.requireTier('university-registered') },
            async (request) => ({
              reader: request.session!.openId,
            }),
          )
          app.get('/profile', { onRequest: app.requireTier('messenger-registered') }, async () => ({
            ok: true,
          }))
        },
      },
    )
  })
  after(() => stack.close())

  const db = () => stack.service.db.kysely
  const userRow = (openId: string) => userRowOf(stack, openId)
  const sessionRow = (openId: string) =>
    db()
      .selectFrom('sessions')
      .innerJoin('identities', 'identities.user_id', 'sessions.user_id')
      .select(['sessions.expires_at', 'sessions.touched_at'])
      .where('identities.subject', '=', openId)
      .executeTakeFirst()

  it('GET /session tells who a key belongs to', async () => {
    const { sessionKey, openId } = await registerMessenger(stack)
    const response = await sessionOf(stack, sessionKey)
    assert.equal(response.status, 200)
    assert.equal(response.headers.get('content-type'), MEDIA_TYPE)
    assert.match(response.body.sessionId as string, /^[0-9a-f-]{36}$/)
    assert.deepEqual(response.body, {
      sessionId: response.body.sessionId as string,
      openId,
      appId: 'wx-sandbox-app',
      platform: 'wechat',
      tier: 'messenger-registered',
      expiresAt: new Date(stack.service.clock.now().getTime() + 10 * MINUTE).toISOString(),
    })
  })

  it('accepts the key as "Bearer <key>" too', async () => {
    const { sessionKey } = await registerMessenger(stack)
    const response = await call(`${stack.service.url}/session`, {
      headers: { authorization: `Bearer ${sessionKey}` },
    })
    assert.equal(response.status, 200)
  })

  it('answers 403 missing-authorization-header without the header, 401 for an unknown key', async () => {
    const missing = await call(`${stack.service.url}/session`)
    assert.equal(missing.status, 403)
    assert.deepEqual(missing.body, { error: '@forbidden/missing-authorization-header' })
    const unknown = await call(`${stack.service.url}/session`, {
      headers: { authorization: 'not-a-real-key' },
    })
    assert.equal(unknown.status, 401)
    assert.deepEqual(unknown.body, { error: '@unauthorized/invalid-session-key' })
    const huge = await call(`${stack.service.url}/session`, {
      headers: { authorization: 'k'.repeat(5000) },
    })
    assert.equal(huge.status, 401)
  })

  it('extends validity with each use, so a key in use never expires', async () => {
    const { sessionKey } = await registerMessenger(stack)
    for (let i = 0; i < 5; i += 1) {
      stack.service.clock.advance(9 * MINUTE)
      assert.equal((await sessionOf(stack, sessionKey)).status, 200, `use ${i + 1}`)
    }
  })

  it('writes the new expiry back at most once per touch interval', async () => {
    const { sessionKey, openId } = await registerMessenger(stack)
    const initial = await sessionRow(openId)
    stack.service.clock.advance(30_000)
    await sessionOf(stack, sessionKey)
    assert.deepEqual(await sessionRow(openId), initial, 'a use within the interval is not written')
    stack.service.clock.advance(31_000)
    await sessionOf(stack, sessionKey)
    const touched = await sessionRow(openId)
    assert.equal(touched!.touched_at, stack.service.clock.now().getTime())
    assert.equal(touched!.expires_at, stack.service.clock.now().getTime() + 10 * MINUTE)
  })

  it('expires an idle key; the session ends like a logout and the user row stays', async () => {
    const { sessionKey, openId } = await registerUniversity(stack)
    stack.service.clock.advance(10 * MINUTE)
    const response = await sessionOf(stack, sessionKey)
    assert.equal(response.status, 401)
    assert.deepEqual(response.body, { error: '@unauthorized/invalid-session-key' })
    assert.equal(await sessionRow(openId), undefined)
    const user = await userRow(openId)
    assert.equal(user.messenger_session_key, null)
    assert.equal(user.university_token, null)
  })

  it('ends expired sessions in the background even when the key is never shown again', async () => {
    const { openId } = await registerUniversity(stack)
    stack.service.clock.advance(11 * MINUTE)
    const counts = await stack.service.pruner.runOnce()
    assert.ok(counts !== null && counts.sessions >= 1)
    assert.equal(await sessionRow(openId), undefined)
    assert.equal((await userRow(openId)).university_token, null)
  })

  it('logout ends the session and nullifies the messenger session key and university token', async () => {
    const { sessionKey, openId } = await registerUniversity(stack)
    const before = await userRow(openId)
    assert.notEqual(before.messenger_session_key, null)
    assert.notEqual(before.university_token, null)

    const response = await call(`${stack.service.url}/logout`, {
      method: 'POST',
      headers: { authorization: sessionKey },
    })
    assert.equal(response.status, 200)
    assert.equal(response.headers.get('content-type'), MEDIA_TYPE)
    assert.deepEqual(response.body, {})

    const user = await userRow(openId)
    assert.equal(user.id, before.id, 'the user row is kept')
    assert.equal(user.messenger_session_key, null)
    assert.equal(user.university_token, null)
    const again = await call(`${stack.service.url}/logout`, {
      method: 'POST',
      headers: { authorization: sessionKey },
    })
    assert.equal(again.status, 401)
    assert.deepEqual(again.body, { error: '@unauthorized/invalid-session-key' })
  })

  it('logout without the header is 403 missing-authorization-header', async () => {
    const response = await call(`${stack.service.url}/logout`, { method: 'POST' })
    assert.equal(response.status, 403)
    assert.deepEqual(response.body, { error: '@forbidden/missing-authorization-header' })
  })

  it('after logout the user registers again at tier 1', async () => {
    const { sessionKey, openId } = await registerUniversity(stack)
    await call(`${stack.service.url}/logout`, {
      method: 'POST',
      headers: { authorization: sessionKey },
    })
    const again = await registerMessenger(stack, openId)
    assert.equal((await sessionOf(stack, again.sessionKey)).body.tier, 'messenger-registered')
  })

  it('the tier guard admits tier 2 only to university routes, with 403 insufficient-registration-tier', async () => {
    const tier1 = await registerMessenger(stack)
    const refused = await call(`${stack.service.url}/forum/posts`, {
      headers: { authorization: tier1.sessionKey },
    })
    assert.equal(refused.status, 403)
    assert.equal(refused.headers.get('content-type'), MEDIA_TYPE)
    assert.deepEqual(refused.body, { error: '@forbidden/insufficient-registration-tier' })
    assert.equal(
      (await call(`${stack.service.url}/profile`, { headers: { authorization: tier1.sessionKey } }))
        .status,
      200,
    )

    const tier2 = await registerUniversity(stack)
    const admitted = await call(`${stack.service.url}/forum/posts`, {
      headers: { authorization: tier2.sessionKey },
    })
    assert.equal(admitted.status, 200)
    assert.equal(admitted.headers.get('content-type'), MEDIA_TYPE)
    assert.deepEqual(admitted.body, { reader: tier2.openId })

    const anonymous = await call(`${stack.service.url}/forum/posts`)
    assert.equal(anonymous.status, 403)
    assert.deepEqual(anonymous.body, { error: '@forbidden/missing-authorization-header' })
  })

  it('answers a key check from the last committed state while a transaction is open, without waiting for it', async () => {
    const { sessionKey, openId } = await registerMessenger(stack)
    const { id: userId } = await userRow(openId)
    let opened!: () => void
    const isOpen = new Promise<void>((resolve) => (opened = resolve))
    let finish!: () => void
    const finished = new Promise<void>((resolve) => (finish = resolve))
    const rolledBack = new Error('rolled back on purpose')
    const transaction = inTransaction(db(), async (trx) => {
      await trx.deleteFrom('sessions').where('user_id', '=', userId).execute()
      opened()
      await finished
      throw rolledBack
    })
    await isOpen
    // The session's deletion is not committed: the key still stands, and the check does not
    // wait for the transaction (which waits for the check).
    const during = await sessionOf(stack, sessionKey)
    finish()
    await assert.rejects(transaction, rolledBack)
    assert.equal(during.status, 200)
    assert.equal((await sessionOf(stack, sessionKey)).status, 200)
  })

  it('writes a touch that falls due while a transaction is open once that transaction has ended', async () => {
    const { sessionKey, openId } = await registerMessenger(stack)
    const other = await registerMessenger(stack)
    const otherId = await userIdOf(db(), other.openId)
    let opened!: () => void
    const isOpen = new Promise<void>((resolve) => (opened = resolve))
    let finish!: () => void
    const finished = new Promise<void>((resolve) => (finish = resolve))
    const transaction = inTransaction(db(), async (trx) => {
      await trx.updateTable('users').set({ updated_at: 1 }).where('id', '=', otherId).execute()
      opened()
      await finished
    })
    await isOpen
    stack.service.clock.advance(2 * MINUTE)
    // The touch waits for the transaction (SQLite: it holds the one writing connection) …
    const check = sessionOf(stack, sessionKey)
    await new Promise((resolve) => setTimeout(resolve, 50))
    finish()
    await transaction
    // … and is written once it has committed, before the answer.
    assert.equal((await check).status, 200)
    const touched = await sessionRow(openId)
    assert.equal(touched!.touched_at, stack.service.clock.now().getTime())
    assert.equal(touched!.expires_at, stack.service.clock.now().getTime() + 10 * MINUTE)
  })
})
