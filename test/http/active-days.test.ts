import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { countActiveUsersByDay } from '../../src/sessions/store.js'
import { TestClock } from '../helpers/clock.js'
import { call } from '../helpers/service.js'
import {
  registerMessenger,
  sessionOf,
  startStack,
  userRowOf,
  type Stack,
} from '../helpers/stack.js'

const SECOND = 1000

describe('active users per day: a user counts once on each UTC day it used its key', () => {
  let stack: Stack
  const clock = new TestClock(Date.parse('2026-03-09T23:50:00Z'))
  before(async () => {
    stack = await startStack({ SESSION_TTL: '10m', SESSION_TOUCH_INTERVAL: '1m' }, { clock })
  })
  after(() => stack.close())

  const db = () => stack.service.db.kysely
  const marksOf = async (userId: string) =>
    (
      await db()
        .selectFrom('user_active_days')
        .select('day')
        .where('user_id', '=', userId)
        .orderBy('day')
        .execute()
    ).map((row) => row.day)
  const usersOn = async (day: string) =>
    (await countActiveUsersByDay(db(), '2026-03-01')).find((count) => count.day === day)?.users ?? 0
  const use = async (sessionKey: string) =>
    assert.equal((await sessionOf(stack, sessionKey)).status, 200)

  it('marks the day once however often the key is used, the next day anew, and erasure deletes the marks', async () => {
    const { sessionKey, openId } = await registerMessenger(stack)
    const userId = (await userRowOf(stack, openId)).id
    assert.deepEqual(await marksOf(userId), ['2026-03-09'], 'registering is a use of the key')
    const countedOnFirstDay = await usersOn('2026-03-09')
    assert.ok(countedOnFirstDay >= 1)

    // Uses a touch interval apart: each one writes the expiry back, none adds a mark.
    for (let i = 0; i < 3; i += 1) {
      clock.advance(90 * SECOND)
      await use(sessionKey)
    }
    assert.deepEqual(await marksOf(userId), ['2026-03-09'])
    assert.equal(await usersOn('2026-03-09'), countedOnFirstDay)

    // Past midnight (UTC), within one touch interval of the last write-back.
    clock.advance(Date.parse('2026-03-10T00:00:10Z') - clock.now().getTime())
    const before = await usersOn('2026-03-10')
    await use(sessionKey)
    assert.deepEqual(await marksOf(userId), ['2026-03-09', '2026-03-10'])
    assert.equal(await usersOn('2026-03-10'), before + 1)
    clock.advance(5 * SECOND)
    await use(sessionKey)
    assert.deepEqual(await marksOf(userId), ['2026-03-09', '2026-03-10'])

    const erased = await call(`${stack.service.url}/user`, {
      method: 'DELETE',
      headers: { authorization: sessionKey },
    })
    assert.equal(erased.status, 200)
    assert.deepEqual(await marksOf(userId), [])
    assert.equal(await usersOn('2026-03-10'), before)
  })

  it('writes the first use of a day back even within the touch interval', async () => {
    clock.advance(Date.parse('2026-03-10T23:58:00Z') - clock.now().getTime())
    const { sessionKey, openId } = await registerMessenger(stack)
    const session = () =>
      db()
        .selectFrom('sessions')
        .innerJoin('identities', 'identities.user_id', 'sessions.user_id')
        .select(['sessions.touched_at', 'sessions.expires_at'])
        .where('identities.subject', '=', openId)
        .executeTakeFirstOrThrow()
    const registered = await session()
    clock.advance(100 * SECOND)
    await use(sessionKey)
    const lastOfDay = await session()
    clock.advance(30 * SECOND)
    await use(sessionKey)
    const firstOfDay = await session()
    assert.ok(lastOfDay.touched_at > registered.touched_at)
    assert.equal(firstOfDay.touched_at, clock.now().getTime())
    assert.ok(firstOfDay.expires_at >= lastOfDay.expires_at, 'the expiry is never lowered')
  })
})
