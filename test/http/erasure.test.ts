import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { call, MEDIA_TYPE } from '../helpers/service.js'
import {
  openLink,
  registerMessenger,
  registerUniversity,
  requestConfirmationLink,
  sessionOf,
  startStack,
  type Stack,
} from '../helpers/stack.js'

describe("DELETE /user: erasure on the user's request", () => {
  let stack: Stack
  before(async () => {
    stack = await startStack()
  })
  after(() => stack.close())

  const rowsFor = async (openId: string) => {
    const db = stack.service.db.kysely
    const user = await db
      .selectFrom('identities')
      .select('user_id as id')
      .where('subject', '=', openId)
      .executeTakeFirst()
    return user
  }

  it('ends the session and forgets the user, their codes, attempts and mails', async () => {
    const user = await registerUniversity(stack, 'erase-me@example.edu')
    const again = await requestConfirmationLink(stack, user.sessionKey, 'erase-me-too@example.edu')
    await openLink(again)
    const userId = (await rowsFor(user.openId))!.id

    const response = await call(`${stack.service.url}/user`, {
      method: 'DELETE',
      headers: { authorization: user.sessionKey },
    })
    assert.equal(response.status, 200)
    assert.equal(response.headers.get('content-type'), MEDIA_TYPE)
    assert.deepEqual(response.body, {})

    assert.equal((await sessionOf(stack, user.sessionKey)).status, 401)
    assert.equal((await openLink(again)).status, 401)
    const db = stack.service.db.kysely
    assert.equal(await rowsFor(user.openId), undefined)
    for (const table of ['sessions', 'registration_codes', 'university_attempts'] as const) {
      const left = await db
        .selectFrom(table)
        .select('user_id')
        .where('user_id', '=', userId)
        .execute()
      assert.deepEqual(left, [], table)
    }
    const mails = await db
      .selectFrom('mail_outbox')
      .select('recipient')
      .where('recipient', 'in', ['erase-me@example.edu', 'erase-me-too@example.edu'])
      .execute()
    assert.deepEqual(mails, [])
  })

  it('lets the same messenger user register again from scratch, at tier 1', async () => {
    const first = await registerUniversity(stack)
    await call(`${stack.service.url}/user`, {
      method: 'DELETE',
      headers: { authorization: first.sessionKey },
    })
    const back = await registerMessenger(stack, first.openId)
    assert.equal((await sessionOf(stack, back.sessionKey)).body.tier, 'messenger-registered')
  })

  it('needs a valid session key', async () => {
    const missing = await call(`${stack.service.url}/user`, { method: 'DELETE' })
    assert.equal(missing.status, 403)
    assert.deepEqual(missing.body, { error: '@forbidden/missing-authorization-header' })
    const unknown = await call(`${stack.service.url}/user`, {
      method: 'DELETE',
      headers: { authorization: 'nope' },
    })
    assert.equal(unknown.status, 401)
    assert.deepEqual(unknown.body, { error: '@unauthorized/invalid-session-key' })
  })
})
