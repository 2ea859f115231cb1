import assert from 'node:assert/strict'
import { insertPerson } from '../helpers/people.js'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import { generateSecret, hashSecret } from '../../src/lib/secrets.js'
import { TestClock } from '../helpers/clock.js'
import { call, startService, type RunningService } from '../helpers/service.js'

// docs/sessions.md, "Validity": a key check writes the sliding validity back at most once per
// touch interval, and on the first use of a UTC day whatever the interval (marking the user
// active), never past SESSION_MAX_AGE. The rule is decided once (sessions/touch-rule.ts) and each
// database's store writes what it decided (sessions/store-sqlite.ts, store-postgres.ts); both are
// held here to one oracle, written from the docs alone, over generated session states, through
// GET /session (this file runs on SQLite and on PostgreSQL).

const SECOND = 1_000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

interface Rule {
  ttl: number
  interval: number
  maxAge: number | null
}

interface State {
  createdAt: number
  expiresAt: number
  touchedAt: number
}

/** What docs/sessions.md says a key check at `now` does to a session in `state`. */
function oracle(rule: Rule, state: State, now: number) {
  const end = rule.maxAge === null ? Infinity : state.createdAt + rule.maxAge
  if (state.expiresAt <= now || end <= now) return { live: false as const }
  const extended = Math.min(now + rule.ttl, end)
  const newDay = new Date(state.touchedAt).toISOString().slice(0, 10) < dayOf(now)
  const due = newDay || (now - state.touchedAt >= rule.interval && extended > state.expiresAt)
  const stored = Math.min(state.expiresAt, end)
  return {
    live: true as const,
    row: due ? { expiresAt: Math.max(state.expiresAt, extended), touchedAt: now } : state,
    reported: due ? Math.max(stored, extended) : stored,
    marked: due && newDay,
  }
}

const dayOf = (at: number) => new Date(at).toISOString().slice(0, 10)

const RULES: { env: Record<string, string>; rule: Rule }[] = [
  {
    env: { SESSION_TTL: '1h', SESSION_TOUCH_INTERVAL: '5m' },
    rule: { ttl: HOUR, interval: 5 * MINUTE, maxAge: null },
  },
  {
    env: { SESSION_TTL: '30d', SESSION_TOUCH_INTERVAL: '60s', SESSION_MAX_AGE: '2d' },
    rule: { ttl: 30 * DAY, interval: MINUTE, maxAge: 2 * DAY },
  },
]

/** A session's state and the moment of the key check, near midnight and interval edges. */
const cases = fc
  .record({
    // Minutes around a UTC midnight, so that first uses of a day are common.
    now: fc
      .integer({ min: -90, max: 90 })
      .map((m) => Date.parse('2026-05-20T00:00:00Z') + m * MINUTE),
    sinceTouch: fc.oneof(
      // Either side of each rule's interval.
      fc.constantFrom(MINUTE - 1, MINUTE, 5 * MINUTE - 1, 5 * MINUTE),
      fc.integer({ min: 0, max: 10 * MINUTE }),
      fc.integer({ min: 0, max: 3 * DAY }),
    ),
    sinceCreatedBeforeTouch: fc.integer({ min: 0, max: 3 * DAY }),
    expiresFromNow: fc.oneof(
      fc.integer({ min: -HOUR, max: 2 * HOUR }),
      fc.integer({ min: -DAY, max: 31 * DAY }),
    ),
  })
  .map(({ now, sinceTouch, sinceCreatedBeforeTouch, expiresFromNow }) => {
    const touchedAt = now - sinceTouch
    return {
      now,
      state: {
        touchedAt,
        createdAt: touchedAt - sinceCreatedBeforeTouch,
        expiresAt: now + expiresFromNow,
      },
    }
  })

for (const { env, rule } of RULES) {
  describe(`the touch rule (${Object.entries(env)
    .map(([name, value]) => `${name}=${value}`)
    .join(', ')})`, () => {
    let service: RunningService
    const clock = new TestClock(Date.parse('2026-05-19T00:00:00Z'))
    before(async () => {
      service = await startService({ ...env, LOG_LEVEL: 'warn' }, { clock })
    })
    after(() => service.close())

    let serial = 0
    /** A user and session in `state`, straight into the tables; returns its key and ids. */
    async function seed(state: State) {
      serial += 1
      const userId = `touch-user-${serial}`
      const sessionId = `touch-session-${serial}`
      const key = generateSecret()
      const db = service.db.kysely
      const { identityId } = await insertPerson(db, {
        id: userId,
        openId: `touch-open-${serial}`,
        createdAt: state.createdAt,
      })
      await db
        .insertInto('sessions')
        .values({
          id: sessionId,
          user_id: userId,
          identity_id: identityId,
          key_hash: hashSecret(key),
          created_at: state.createdAt,
          expires_at: state.expiresAt,
          touched_at: state.touchedAt,
        })
        .execute()
      return { key, userId, sessionId }
    }

    it('GET /session writes back, reports and marks the day exactly as docs/sessions.md says', async () => {
      await fc.assert(
        fc.asyncProperty(cases, async ({ now, state }) => {
          const { key, userId, sessionId } = await seed(state)
          clock.advance(now - clock.now().getTime())
          const answer = await call(`${service.url}/session`, { headers: { authorization: key } })
          const expected = oracle(rule, state, now)
          const db = service.db.kysely
          const row = await db
            .selectFrom('sessions')
            .select(['expires_at', 'touched_at'])
            .where('id', '=', sessionId)
            .executeTakeFirst()
          const marks = await db
            .selectFrom('user_active_days')
            .select('day')
            .where('user_id', '=', userId)
            .execute()
          if (!expected.live) {
            assert.equal(answer.status, 401, answer.text)
            assert.equal(row, undefined, 'an expired session ends')
            assert.deepEqual(marks, [])
            return
          }
          assert.equal(answer.status, 200, answer.text)
          assert.equal(
            (answer.body as { expiresAt: string }).expiresAt,
            new Date(expected.reported).toISOString(),
          )
          assert.deepEqual(row, {
            expires_at: expected.row.expiresAt,
            touched_at: expected.row.touchedAt,
          })
          assert.deepEqual(
            marks.map((mark) => mark.day),
            expected.marked ? [dayOf(now)] : [],
          )
        }),
        { numRuns: 60 },
      )
    })
  })
}
