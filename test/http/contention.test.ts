import assert from 'node:assert/strict'
import { personRowOrThrow } from '../helpers/people.js'
import { after, before, describe, it } from 'node:test'
import { call, WITHOUT_ADDRESS_LIMITS } from '../helpers/service.js'
import { TEST_DIALECT } from '../helpers/database.js'
import {
  decideAtProvider,
  openLink,
  registerMessenger,
  requestConfirmationLink,
  startStack,
  type Stack,
} from '../helpers/stack.js'

// Hundreds of rounds where PostgreSQL takes row locks; SQLite serializes writers anyway.
const ROUNDS = TEST_DIALECT === 'postgres' ? 200 : 60

describe('contention: requests racing on one user (issue 19)', () => {
  let stack: Stack
  before(async () => {
    // The load comes from one address: only the per-address limits are lifted.
    stack = await startStack({ LOG_LEVEL: 'warn' }, WITHOUT_ADDRESS_LIMITS)
  })
  after(() => stack.close())

  const request = (path: string, method: string, sessionKey: string) =>
    call(`${stack.service.url}${path}`, { method, headers: { authorization: sessionKey } })

  async function userRows(openId: string) {
    const db = stack.service.db.kysely
    const ids = await db
      .selectFrom('identities')
      .select('user_id')
      .where('subject', '=', openId)
      .execute()
      .then((rows) => rows.map((row) => row.user_id))
    const count = async (table: 'sessions' | 'registration_codes' | 'university_attempts') =>
      ids.length === 0
        ? 0
        : (await db.selectFrom(table).select('id').where('user_id', 'in', ids).execute()).length
    const users = await Promise.all(
      ids.map((id) => personRowOrThrow(db, openId).then((row) => ({ ...row, id }))),
    )
    return {
      users,
      sessions: await count('sessions'),
      codes: await count('registration_codes'),
      attempts: await count('university_attempts'),
    }
  }

  it('two erasures and a logout at the same moment never answer 5xx and leave no trace', async () => {
    const statuses = new Map<number, number>()
    for (let round = 0; round < ROUNDS; round += 1) {
      const user = await registerMessenger(stack)
      const answers = await Promise.all([
        request('/user', 'DELETE', user.sessionKey),
        request('/user', 'DELETE', user.sessionKey),
        request('/logout', 'POST', user.sessionKey),
      ])
      for (const answer of answers) {
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1)
        assert.ok([200, 401].includes(answer.status), `round ${round}: ${answer.text}`)
      }
      assert.ok(answers.some((answer) => answer.status === 200))
      const left = await userRows(user.openId)
      // An erasure that got in after the logout found the key dead (401): the user may remain,
      // but never with a live session or pending link.
      assert.equal(left.sessions, 0, `round ${round}`)
      assert.equal(left.codes, 0, `round ${round}`)
      if (answers[0].status === 200 || answers[1].status === 200) assert.equal(left.users.length, 0)
    }
    assert.deepEqual(
      [...statuses.keys()].filter((status) => status >= 500),
      [],
    )
  })

  it('logout, re-registration and erasure racing a pending tier-2 link end consistent', async () => {
    for (let round = 0; round < ROUNDS / 5; round += 1) {
      const user = await registerMessenger(stack)
      const link = await requestConfirmationLink(stack, user.sessionKey, `race${round}@example.edu`)
      const opened = await openLink(link)
      const callback = await decideAtProvider(stack, user.openId, 'allow')
      const answers = await Promise.all([
        fetch(callback, { headers: { cookie: opened.cookie, accept: 'application/json' } }),
        request('/logout', 'POST', user.sessionKey),
        request('/user', 'DELETE', user.sessionKey),
      ])
      const statuses = answers.map((answer) => answer.status)
      await answers[0].arrayBuffer()
      assert.equal(statuses[0], 200, 'the callback always answers 200')
      assert.ok(
        statuses.slice(1).every((status) => status === 200 || status === 401),
        String(statuses),
      )
      const left = await userRows(user.openId)
      assert.equal(left.sessions, 0)
      assert.equal(left.codes, 0)
      // Whoever won, no user is left tier 2 without a session to use it.
      for (const row of left.users) assert.equal(row.university_token, null)
    }
  })
})
