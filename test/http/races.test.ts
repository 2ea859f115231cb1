import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { SANDBOX_APP } from '../../src/sandbox/routes.js'
import { call } from '../helpers/service.js'
import {
  decideAtProvider,
  mintLoginCode,
  openLink,
  registerMessenger,
  requestConfirmationLink,
  sessionOf,
  startStack,
  type Stack,
} from '../helpers/stack.js'

describe('concurrency', () => {
  let stack: Stack
  before(async () => {
    stack = await startStack()
  })
  after(() => stack.close())

  const db = () => stack.service.db.kysely

  it('simultaneous registrations for one openId leave one user and exactly SESSIONS_PER_USER live sessions', async () => {
    const openId = `race-${Date.now()}`
    const cap = stack.service.config.sessions.perUser
    const codes = await Promise.all(
      Array.from({ length: cap + 2 }, () => mintLoginCode(stack, openId)),
    )
    const responses = await Promise.all(
      codes.map(({ code }) =>
        call(`${stack.service.url}/register/messenger`, {
          method: 'POST',
          json: { ...SANDBOX_APP, code },
        }),
      ),
    )
    assert.deepEqual(
      responses.map((r) => r.status),
      codes.map(() => 200),
    )
    const users = await db()
      .selectFrom('identities')
      .select('user_id as id')
      .where('subject', '=', openId)
      .execute()
    assert.equal(users.length, 1)
    const sessions = await db()
      .selectFrom('sessions')
      .select('id')
      .where('user_id', '=', users[0].id)
      .execute()
    // Each registration counts the user's sessions under the user's row lock: the cap holds.
    assert.equal(sessions.length, cap)
    const valid = await Promise.all(
      responses.map(async (r) => (await sessionOf(stack, r.body.sessionKey as string)).status),
    )
    assert.deepEqual(
      valid.filter((status) => status === 200).length,
      cap,
      `statuses: ${valid.join(' ')}`,
    )
    assert.deepEqual(valid.filter((status) => status === 401).length, 2)
  })

  it('a logout racing other requests never brings the session back', async () => {
    const { sessionKey, openId } = await registerMessenger(stack)
    const auth = { authorization: sessionKey }
    // Uses that would write the expiry back race the logout.
    stack.service.clock.advance(120_000)
    const racing = await Promise.all([
      sessionOf(stack, sessionKey),
      call(`${stack.service.url}/logout`, { method: 'POST', headers: auth }),
      sessionOf(stack, sessionKey),
      sessionOf(stack, sessionKey),
      call(`${stack.service.url}/logout`, { method: 'POST', headers: auth }),
    ])
    assert.ok(racing.every((r) => r.status === 200 || r.status === 401))
    assert.ok(racing.some((r) => r.status === 200))
    assert.equal((await sessionOf(stack, sessionKey)).status, 401)
    const left = await db()
      .selectFrom('sessions')
      .innerJoin('identities', 'identities.user_id', 'sessions.user_id')
      .select('sessions.id')
      .where('identities.subject', '=', openId)
      .execute()
    assert.deepEqual(left, [])
  })

  it('a callback delivered twice at once links once', async () => {
    const user = await registerMessenger(stack)
    const link = await requestConfirmationLink(stack, user.sessionKey, 'twice@example.edu')
    const opened = await openLink(link)
    const callbackUrl = await decideAtProvider(stack, user.openId, 'allow')
    const deliveries = await Promise.all(
      [1, 2].map(() =>
        fetch(callbackUrl, { headers: { cookie: opened.cookie, accept: 'application/json' } }).then(
          async (r) => ({ status: r.status, body: await r.text() }),
        ),
      ),
    )
    assert.deepEqual(
      deliveries.map((d) => d.status),
      [200, 200],
    )
    const attempts = await db()
      .selectFrom('university_attempts')
      .innerJoin('identities', 'identities.user_id', 'university_attempts.user_id')
      .select('university_attempts.status')
      .where('identities.subject', '=', user.openId)
      .execute()
    assert.deepEqual(
      attempts.map((a) => a.status),
      ['completed'],
    )
    assert.equal((await sessionOf(stack, user.sessionKey)).body.tier, 'university-registered')
    const linkedEvents = stack.service
      .logs()
      .split('\n')
      .filter((line) => line.includes('"university-linked"'))
    const attemptId = (
      await db()
        .selectFrom('university_attempts')
        .innerJoin('identities', 'identities.user_id', 'university_attempts.user_id')
        .select('university_attempts.id')
        .where('identities.subject', '=', user.openId)
        .executeTakeFirstOrThrow()
    ).id
    assert.equal(linkedEvents.filter((line) => line.includes(attemptId)).length, 1)
  })
})
