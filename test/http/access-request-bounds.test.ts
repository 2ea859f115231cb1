import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { AccessDocument } from '../../src/accounts/access.js'
import { campusgate, consoleLink, fromConsole, signIn } from '../helpers/console.js'
import { call } from '../helpers/service.js'
import { registerMessenger, startStack, userRowOf, type Stack } from '../helpers/stack.js'

/**
 * docs/console.md, "Access requests": an export's cost is bounded whatever the history. The
 * person's repeated exports add one audit row a day at most, and a history over about 4 MB comes
 * in pages (`?before=`) that hold every row exactly once.
 */
const DAY_MS = 86_400_000

describe('access requests stay bounded', () => {
  let stack: Stack

  before(async () => {
    stack = await startStack()
  })
  after(() => stack.close())

  const exportsAudited = async (userId: string) =>
    (
      await stack.service.db.kysely
        .selectFrom('audit_events')
        .select('actor')
        .where('type', '=', 'data-export')
        .where('user_id', '=', userId)
        .execute()
    ).map((row) => row.actor)

  it("audits the person's own exports once a day, however often they ask", async () => {
    const user = await registerMessenger(stack)
    const { id } = await userRowOf(stack, user.openId)
    const ask = () =>
      call(`${stack.service.url}/user/data`, { headers: { authorization: user.sessionKey } })
    assert.equal((await ask()).status, 200)
    assert.equal((await ask()).status, 200)
    // Asked at once, too.
    const together = await Promise.all([ask(), ask(), ask()])
    assert.deepEqual(
      together.map((answer) => answer.status),
      [200, 200, 200],
    )
    assert.deepEqual(await exportsAudited(id), ['api'])
    stack.service.clock.advance(DAY_MS)
    assert.equal((await ask()).status, 200)
    assert.equal((await ask()).status, 200)
    assert.deepEqual(await exportsAudited(id), ['api', 'api'])
    // An operator's export is their action, audited each time.
    for (let i = 0; i < 2; i += 1) {
      assert.equal((await campusgate(stack.service, 'users', 'export', user.openId)).code, 0)
    }
    assert.equal((await exportsAudited(id)).length, 4)
  })

  it('pages a history over 4 MB with ?before=, every audit row and event exactly once', async () => {
    const user = await registerMessenger(stack)
    const { id: userId } = await userRowOf(stack, user.openId)
    const db = stack.service.db.kysely
    const start = stack.service.clock.now().getTime() - 200 * DAY_MS
    // About 7 MB of audit rows and 4 MB of events; many share a millisecond, as a busy day's do.
    const note = 'n'.repeat(1000)
    const AUDITS = 6000
    const EVENTS = 3000
    for (let from = 0; from < AUDITS; from += 250) {
      await db
        .insertInto('audit_events')
        .values(
          Array.from({ length: 250 }, (_, k) => from + k).map((n) => ({
            id: `seeded-${String(n).padStart(6, '0')}`,
            at: start + Math.floor(n / 7) * 1000,
            type: 'registration',
            actor: 'api',
            user_id: userId,
            open_id: user.openId,
            ip: '192.0.2.1',
            detail: JSON.stringify({ n, note }),
          })),
        )
        .execute()
    }
    for (let from = 0; from < EVENTS; from += 250) {
      const rows = Array.from({ length: 250 }, (_, k) => from + k).map((n) => ({
        id: `event-${String(n).padStart(6, '0')}`,
        user_id: userId,
        seq: 10_000 + n,
        type: 'session.started',
        body: JSON.stringify({ type: 'session.started', data: { n, note } }),
        created_at: start + Math.floor(n / 3) * 1000 + 500,
      }))
      await db.insertInto('webhook_events').values(rows).execute()
      await db
        .insertInto('webhook_deliveries')
        .values(
          rows.map((row) => ({
            id: `delivery-${row.id}`,
            event_id: row.id,
            endpoint: 'https://backend.example/hooks',
            user_id: userId,
            seq: row.seq,
            state: 'delivered' as const,
            attempts: 1,
            next_attempt_at: row.created_at,
            retry_until: row.created_at + DAY_MS,
            locked_until: null,
            last_error: null,
            finished_at: row.created_at + 10,
          })),
        )
        .execute()
    }

    const audits: number[] = []
    const events: number[] = []
    let cursor: string | null = null
    let pages = 0
    do {
      const path: string = cursor === null ? '/user/data' : `/user/data?before=${cursor}`
      const answer = await call(`${stack.service.url}${path}`, {
        headers: { authorization: user.sessionKey },
      })
      assert.equal(answer.status, 200, answer.text.slice(0, 200))
      assert.ok(answer.text.length < 4.5 * 1024 * 1024, `a page of ${answer.text.length} bytes`)
      const document = answer.body as AccessDocument
      // Each page's rows in the order they happened, each page older than the one before.
      const times = document.audit.map((row) => Date.parse(row.at))
      assert.deepEqual(
        times,
        [...times].sort((a, b) => a - b),
      )
      for (const row of document.audit) {
        if (typeof row.detail?.n === 'number') audits.push(row.detail.n)
      }
      for (const event of document.events) {
        assert.deepEqual(event.deliveries, [
          {
            endpoint: 'https://backend.example/hooks',
            state: 'delivered',
            finishedAt: event.deliveries[0].finishedAt,
          },
        ])
        events.push(event.data.n as number)
      }
      cursor = document.next === null ? null : document.next.before
      pages += 1
    } while (cursor !== null && pages < 20)
    assert.ok(pages >= 3, `${pages} pages`)
    assert.equal(cursor, null)
    const all = (count: number) => Array.from({ length: count }, (_, n) => n)
    assert.deepEqual(
      [...audits].sort((a, b) => a - b),
      all(AUDITS),
    )
    assert.deepEqual(
      [...events].sort((a, b) => a - b),
      all(EVENTS),
    )

    // The console's Download data and the command line page the same way.
    const alice = await signIn(stack.service, (await consoleLink(stack.service, 'alice')).token)
    const path = `/console/users/${encodeURIComponent(user.openId)}/data`
    const firstDownload = JSON.parse(
      (await fromConsole(stack.service, alice, path)).text,
    ) as AccessDocument
    assert.ok(firstDownload.next !== null)
    const secondDownload = await fromConsole(stack.service, alice, path, firstDownload.next)
    assert.equal(secondDownload.status, 200)
    const older = JSON.parse(secondDownload.text) as AccessDocument
    assert.ok(older.audit.length + older.events.length > 0)
    assert.ok(
      Date.parse(older.audit.at(-1)!.at) <= Date.parse(firstDownload.audit[0].at),
      'the second page is older',
    )

    const first = await campusgate(stack.service, 'users', 'export', user.openId)
    const next = (JSON.parse(first.out) as AccessDocument).next
    assert.ok(next !== null)
    const second = await campusgate(
      stack.service,
      'users',
      'export',
      user.openId,
      '--before',
      next.before,
    )
    assert.equal(second.code, 0, second.err)
    const bad = await campusgate(stack.service, 'users', 'export', user.openId, '--before', 'nope')
    assert.equal(bad.code, 2, bad.err)
  })

  it('refuses a cursor it did not give with 400 invalid-value', async () => {
    const user = await registerMessenger(stack)
    for (const before of ['nope', Buffer.from('[1,2]').toString('base64url'), '']) {
      const answer = await call(`${stack.service.url}/user/data?before=${before}`, {
        headers: { authorization: user.sessionKey },
      })
      assert.equal(answer.status, 400, before)
      assert.deepEqual(answer.body, { error: '@bad-request/invalid-value' }, before)
    }
  })
})
