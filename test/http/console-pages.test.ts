import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import {
  consoleLink,
  fromConsole,
  getPage,
  signIn,
  TEST_KEY,
  type SignedIn,
} from '../helpers/console.js'
import { call } from '../helpers/service.js'
import {
  registerMessenger,
  registerUniversity,
  sessionOf,
  startStack,
  userRowOf,
  type Stack,
} from '../helpers/stack.js'

/**
 * docs/console.md: users, mail, audit and the overview, from outside over HTTP. Each action is
 * the command line's service call, audited with the operator's name.
 */
describe('the operator console: users, mail, audit, overview', () => {
  let stack: Stack
  let alice: SignedIn

  before(async () => {
    stack = await startStack({ DATA_ENCRYPTION_KEY: TEST_KEY })
    // The command line stamps the links with the real clock: both start on one timeline.
    stack.service.clock.advance(Date.now() - stack.service.clock.now().getTime())
    alice = await signIn(stack.service, (await consoleLink(stack.service, 'alice')).token)
  })
  after(() => stack.close())

  const url = (path: string) => `${stack.service.url}${path}`
  /** After the test moved the clock past the console's idle timeout: a link of the service's own time. */
  async function signInAgain() {
    const link = await stack.service.consoleSessions.createLink('alice', 'admin', {
      actor: 'cli:test',
      ip: null,
    })
    alice = await signIn(stack.service, link.token)
  }
  const page = async (path: string) => {
    const answer = await getPage(url(path), alice.cookie)
    assert.equal(answer.status, 200, `${path}: ${answer.text}`)
    return answer.text
  }
  const act = async (path: string, fields: Record<string, string> = {}) => {
    const answer = await fromConsole(stack.service, alice, path, fields)
    assert.equal(answer.status, 303, answer.text)
    return answer.headers.get('location') ?? ''
  }
  async function auditOf(type: string) {
    return stack.service.db.kysely
      .selectFrom('audit_events')
      .select(['type', 'actor', 'open_id', 'user_id', 'detail'])
      .where('type', '=', type)
      .orderBy('at', 'desc')
      .orderBy('id', 'desc')
      .execute()
  }
  /** The openIds a users page lists, in order. */
  const listed = (html: string) =>
    [...html.matchAll(/<td data-label="openId"><a href="\/console\/users\/([^"?]+)/g)].map(
      (match) => decodeURIComponent(match[1]),
    )

  it('lists every user newest first, 50 a page with the total, "Next" and "Previous"', async () => {
    const made: string[] = []
    for (let index = 0; index < 53; index += 1) {
      stack.service.clock.advance(1000)
      made.push((await registerMessenger(stack, `list-${String(index).padStart(2, '0')}`)).openId)
    }
    const first = await page('/console/users?q=list-')
    assert.match(first, /1–50 of 53/)
    assert.deepEqual(listed(first), made.slice(3).reverse())
    assert.match(first, /<a href="\/console\/users\?q=list-&amp;page=2" rel="next">Next<\/a>/)
    assert.doesNotMatch(first, />Previous</)
    const second = await page('/console/users?q=list-&page=2')
    assert.match(second, /51–53 of 53/)
    assert.deepEqual(listed(second), made.slice(0, 3).reverse())
    assert.match(second, /<a href="\/console\/users\?q=list-" rel="prev">Previous<\/a>/)
    assert.doesNotMatch(second, />Next</)
    const all = await page('/console/users')
    const total = await stack.service.db.kysely
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    assert.match(all, new RegExp(`1–50 of ${Number(total.n)}`))
    assert.match(all, /<label for="q">Search users<\/label>/)
  })

  it('filters by tier and sorts by last activity', async () => {
    const linked = await registerUniversity(stack, 'tiered@example.edu')
    const tier1 = await registerMessenger(stack, 'tier-one-user')
    const gone = await registerMessenger(stack, 'tier-none-user')
    await call(url('/logout'), { method: 'POST', headers: { authorization: gone.sessionKey } })
    const tier2 = listed(await page('/console/users?tier=university-registered'))
    assert.ok(tier2.includes(linked.openId))
    assert.ok(!tier2.includes(tier1.openId))
    const none = listed(await page('/console/users?tier=none&q=tier-'))
    assert.deepEqual(none, ['tier-none-user'])
    const one = listed(await page('/console/users?tier=messenger-registered&q=tier-'))
    assert.deepEqual(one, ['tier-one-user'])
    // A day later only list-00 uses its key: it is the most recently active.
    stack.service.clock.advance(86_400_000)
    await signInAgain()
    const early = await registerMessenger(stack, 'list-00')
    assert.equal((await sessionOf(stack, early.sessionKey)).status, 200)
    assert.equal(listed(await page('/console/users?sort=active'))[0], 'list-00')
    assert.notEqual(listed(await page('/console/users'))[0], 'list-00')
  })

  it('finds a user by any part of its openId, unionId, subject, email or name in any case, and by a confirmation address', async () => {
    const user = await registerUniversity(stack, 'Found.Me@example.edu')
    const row = await userRowOf(stack, user.openId)
    assert.ok(row.university_subject)
    assert.ok(row.university_email)
    assert.ok(row.union_id)
    const href = `href="/console/users/${encodeURIComponent(user.openId)}"`
    const middle = (text: string) => text.slice(3, -3)
    const queries = [
      user.openId,
      user.openId.slice(0, 6).toUpperCase(),
      middle(user.openId).toUpperCase(),
      user.openId.slice(-5),
      middle(row.union_id),
      row.university_email.toUpperCase(),
      row.university_email.slice(0, 5),
      middle(row.university_email).toUpperCase(),
      middle(row.university_subject),
      ...(row.university_name === null ? [] : [middle(row.university_name).toLowerCase()]),
    ]
    for (const query of queries) {
      assert.ok((await page(`/console/users?q=${encodeURIComponent(query)}`)).includes(href), query)
    }
    // The address a student typed for the confirmation mail (no link made yet).
    const asker = await registerMessenger(stack)
    const asked = await call(url('/register/university'), {
      method: 'POST',
      headers: { authorization: asker.sessionKey },
      json: { email: 'Typed.Address@Example.edu' },
    })
    assert.equal(asked.status, 200, asked.text)
    assert.deepEqual(listed(await page('/console/users?q=typed.address%40example.EDU')), [
      asker.openId,
    ])
    // Only the exact address: a part of it finds nobody (it was typed, never proven).
    assert.deepEqual(listed(await page('/console/users?q=typed.addr')), [])
    assert.match(await page('/console/users?q=nobody-at-all'), /No user matches/)
    // LIKE's wildcards are searched for literally.
    assert.deepEqual(listed(await page('/console/users?q=list%250')), [])
    assert.deepEqual(listed(await page('/console/users?q=list_0')), [])
    assert.notDeepEqual(listed(await page('/console/users?q=list-0')), [])
  })

  it("shows a user's tier, sessions, university identity, trail and events, and no secret", async () => {
    const user = await registerUniversity(stack, 'shown@example.edu')
    const row = await userRowOf(stack, user.openId)
    const text = await page(`/console/users/${encodeURIComponent(user.openId)}`)
    assert.match(text, /tier 2 \(university-registered\)/)
    assert.match(text, /<td data-label="Expires"><time datetime="20\d\d-/)
    assert.ok(text.includes(row.university_subject!))
    assert.ok(text.includes(row.university_email!))
    assert.match(text, /<code>university-linked<\/code>/, 'the audit trail')
    for (const secret of [
      user.sessionKey,
      row.messenger_session_key,
      row.university_token,
      row.university_binding,
    ]) {
      if (secret !== null) assert.ok(!text.includes(secret), 'no key, token or hash is shown')
    }
    const session = await stack.service.db.kysely
      .selectFrom('sessions')
      .select('key_hash')
      .where('user_id', '=', row.id)
      .executeTakeFirstOrThrow()
    assert.ok(!text.includes(session.key_hash))
    assert.match(text, /<button type="submit">Revoke session<\/button>/)
    assert.match(text, /<button type="submit">Revoke all sessions<\/button>/)
    assert.match(text, /<button type="submit">Unlink university<\/button>/)
    assert.match(text, /<button type="submit">Download data<\/button>/)
    assert.match(text, /<label for="confirm">Type the openId to confirm<\/label>/)
    assert.match(text, /<button type="submit" class="danger">Erase user<\/button>/)
  })

  it('shows an action only where it would change something', async () => {
    const user = await registerMessenger(stack)
    const path = `/console/users/${encodeURIComponent(user.openId)}`
    assert.doesNotMatch(await page(path), />Unlink university</, 'never linked')
    await call(url('/logout'), { method: 'POST', headers: { authorization: user.sessionKey } })
    const text = await page(path)
    assert.doesNotMatch(text, />Revoke session</)
    assert.doesNotMatch(text, />Revoke all sessions</)
    assert.match(text, /No live session/)
    assert.match(text, />Erase user</)
  })

  it('unlinks the university identity: tier 1 again, announced as revoked, audited with the operator', async () => {
    const user = await registerUniversity(stack, 'unlink@example.edu')
    const path = `/console/users/${encodeURIComponent(user.openId)}`
    assert.equal(await act(`${path}/unlink`), `${path}?done=unlinked&count=1`)
    assert.match(await page(`${path}?done=unlinked&count=1`), /University identities unlinked: 1\./)
    const session = await sessionOf(stack, user.sessionKey)
    assert.equal(session.body.tier, 'messenger-registered')
    const [audited] = await auditOf('university-unlinked')
    assert.equal(audited?.actor, 'console:alice')
    assert.equal(await act(`${path}/unlink`), `${path}?done=nothing&count=0`)
  })

  it("lists every device's session and revokes one, or all, as `campusgate sessions revoke` does, naming the operator", async () => {
    const phone = await registerMessenger(stack, undefined, 'Phone/1.0')
    const desktop = await registerMessenger(stack, phone.openId, 'Desktop/2.0')
    const path = `/console/users/${encodeURIComponent(phone.openId)}`
    const text = await page(path)
    assert.ok(text.includes('Phone/1.0') && text.includes('Desktop/2.0'), 'every device is listed')
    assert.match(text, /1–2 of 2/)
    for (const column of ['Device', 'Created', 'Last used', 'Expires']) {
      assert.ok(text.includes(`<th scope="col">${column}</th>`), column)
    }
    assert.equal([...text.matchAll(/>Revoke session</g)].length, 2, 'one button per session')
    const desktopId = (await sessionOf(stack, desktop.sessionKey)).body.sessionId as string
    assert.equal(
      await act(`${path}/revoke`, { session: desktopId }),
      `${path}?done=revoked&count=1`,
    )
    assert.equal((await sessionOf(stack, desktop.sessionKey)).status, 401)
    assert.equal((await sessionOf(stack, phone.sessionKey)).status, 200)
    const [audited] = await auditOf('logout')
    assert.equal(audited?.actor, 'console:alice')
    assert.equal(
      await act(`${path}/revoke`, { session: desktopId }),
      `${path}?done=nothing&count=0`,
    )
    // "Revoke all sessions" asks first: without the confirmation page's answer nothing ends.
    assert.equal(await act(`${path}/revoke`, { session: 'all' }), `${path}/revoke-all`)
    assert.equal((await sessionOf(stack, phone.sessionKey)).status, 200)
    assert.equal(
      await act(`${path}/revoke`, { session: 'all', confirmed: 'yes' }),
      `${path}?done=revokedAll&count=1`,
    )
    assert.equal((await sessionOf(stack, phone.sessionKey)).status, 401)
    assert.equal(
      await act(`${path}/revoke`, { session: 'all', confirmed: 'yes' }),
      `${path}?done=nothing&count=0`,
    )
    // The "Revoke all sessions" button is shown only while there is something to revoke.
    assert.doesNotMatch(await page(path), /Revoke all sessions/)
  })

  it('keeps the page language through an action and its redirect', async () => {
    const user = await registerMessenger(stack)
    const path = `/console/users/${encodeURIComponent(user.openId)}`
    const zh = await page(`${path}?lang=zh-CN`)
    assert.ok(zh.includes(`action="${path}/revoke?lang=zh-CN"`))
    assert.ok(zh.includes('href="/console/users?lang=zh-CN"'), 'the navigation keeps it')
    const location = await act(`${path}/revoke?lang=zh-CN`, {
      session: 'all',
      confirmed: 'yes',
      back: `${path}?lang=zh-CN`,
    })
    assert.equal(location, `${path}?lang=zh-CN&done=revokedAll&count=1`)
    const after = await page(location)
    assert.match(after, /<html lang="zh-CN">/)
    assert.match(after, /全部会话已撤销：1 个。/)
    assert.match(after, /无（没有有效会话）/, 'the tier in Chinese')
  })

  it('erases a user only when the operator typed its openId', async () => {
    const user = await registerMessenger(stack)
    const path = `/console/users/${encodeURIComponent(user.openId)}`
    assert.equal(
      await act(`${path}/erase`, { confirm: 'someone-else' }),
      `${path}?done=mismatch&count=0`,
    )
    assert.equal((await sessionOf(stack, user.sessionKey)).status, 200)
    assert.equal(
      await act(`${path}/erase`, { confirm: user.openId }),
      '/console/users?done=erased&count=1',
    )
    assert.equal((await sessionOf(stack, user.sessionKey)).status, 401)
    const [audited] = await auditOf('erasure')
    assert.deepEqual([audited?.actor, audited?.open_id], ['console:alice', user.openId])
    assert.equal((await getPage(url(path), alice.cookie)).status, 404)
  })

  it('lists pending and dead mail with the total, and makes due only mail whose link has not expired', async () => {
    // The sink stays down: the tests after this one mail nobody. The worker runs only when told,
    // so what the page shows is what this test made.
    await stack.smtp.stop()
    await stack.service.mailWorker.stop()
    const user = await registerMessenger(stack)
    const ask = (email: string) =>
      call(url('/register/university'), {
        method: 'POST',
        headers: { authorization: user.sessionKey },
        json: { email },
      })
    assert.equal((await ask('waiting@example.edu')).status, 200)
    await stack.service.mailWorker.runOnce()
    const mail = await stack.service.db.kysely
      .selectFrom('mail_outbox')
      .select(['id'])
      .where('recipient', '=', 'waiting@example.edu')
      .executeTakeFirstOrThrow()
    const text = await page('/console/mail')
    assert.ok(text.includes(mail.id))
    assert.match(text, /1–\d+ of \d+/)
    assert.match(text, /w\*\*\*@example\.edu/, 'the address is masked')
    assert.ok(!text.includes('waiting@example.edu'))
    assert.equal(await act(`/console/mail/${mail.id}/retry`), '/console/mail?done=retried&count=1')
    assert.match(await page('/console/mail?done=retried&count=1'), /Mail made due now: 1\./)
    // Past REGISTRATION_CODE_TTL the link is dead: no Retry, and a forged one makes nothing due.
    stack.service.clock.advance(31 * 60_000)
    await signInAgain()
    const late = await page('/console/mail')
    assert.match(late, /link expired: it will be abandoned, not sent/)
    assert.ok(!late.includes(`action="/console/mail/${mail.id}/retry"`))
    assert.equal(await act(`/console/mail/${mail.id}/retry`), '/console/mail?done=nothing&count=0')
    // The worker abandons it: it is listed as dead.
    await stack.service.mailWorker.runOnce()
    assert.ok((await page('/console/mail?state=dead')).includes(mail.id))
  })

  it('filters the audit trail by user, type, operator, address and time, 50 a page, details as fields', async () => {
    const user = await registerMessenger(stack)
    const byUser = await page(`/console/audit?openId=${encodeURIComponent(user.openId)}`)
    assert.match(byUser, /<code>registration<\/code>/)
    assert.doesNotMatch(byUser, /<code>console-sign-in<\/code>/)
    const byType = await page('/console/audit?type=console-sign-in')
    assert.match(byType, /console:alice/)
    assert.doesNotMatch(byType, /<code>registration<\/code>/)
    assert.match(byType, /<dt>method<\/dt><dd>link<\/dd>/)
    const byOperator = await page('/console/audit?actor=alice')
    assert.match(byOperator, /console:alice/)
    assert.doesNotMatch(byOperator, /<td data-label="Actor">api<\/td>/)
    // In any case, the bare name or the whole actor.
    for (const actor of ['ALICE', 'Alice', 'Console:Alice']) {
      const found = await page(`/console/audit?actor=${encodeURIComponent(actor)}`)
      assert.match(found, /<td data-label="Actor">console:alice<\/td>/, actor)
      assert.doesNotMatch(found, /<td data-label="Actor">api<\/td>/, actor)
    }
    assert.match(
      await page('/console/audit?ip=127.0.'),
      /<td data-label="Address">127\.0\.0\.1<\/td>/,
    )
    assert.match(await page('/console/audit?ip=10.9.'), /Nothing here/)
    const today = stack.service.clock.now().toISOString().slice(0, 10)
    assert.match(
      await page(`/console/audit?since=${today}&until=${today}&type=registration`),
      /<code>registration<\/code>/,
    )
    assert.match(await page('/console/audit?until=2000-01-01'), /Nothing here/)
    const total = await stack.service.db.kysely
      .selectFrom('audit_events')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    assert.ok(Number(total.n) > 50)
    const all = await page('/console/audit')
    assert.match(all, new RegExp(`1–50 of ${Number(total.n)}`))
    assert.match(all, /rel="next">Next</)
  })

  it('says what each overview figure counts: 30-day totals over per-day bars, and every user', async () => {
    const text = await page('/console')
    const now = stack.service.clock.now().getTime()
    const users = await stack.service.db.kysely
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
    const recent = await stack.service.db.kysely
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('created_at', '>=', (Math.floor(now / 86_400_000) - 29) * 86_400_000)
      .executeTakeFirstOrThrow()
    const live = await stack.service.db.kysely
      .selectFrom('sessions')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('expires_at', '>', now)
      .executeTakeFirstOrThrow()
    assert.match(text, new RegExp(`<h2>Users</h2><p class="big">${Number(users.n)}</p>`))
    assert.match(
      text,
      new RegExp(`aria-label="New users, total of the last 30 days: ${Number(recent.n)} `),
    )
    assert.match(text, /bars: one per UTC day, the last 30 days/)
    assert.match(text, /<figcaption>total of the last 30 days: <strong>\d+<\/strong>/)
    assert.match(text, /aria-label="University links, total of the last 30 days: [1-9]/)
    assert.match(text, new RegExp(`<p class="big">${Number(live.n)}</p>`))
    assert.match(text, /aria-label="Share of tier 2: \d+% \(\d+\/\d+\)"/)
    assert.match(text, /A delivery is one event sent to one endpoint/)
    assert.match(text, /Readiness<\/h2><p class="big-text good">ready/)
  })

  it('speaks Chinese when asked, as the other pages choose', async () => {
    const zh = await getPage(url('/console'), alice.cookie, { 'accept-language': 'zh-CN' })
    assert.match(zh.text, /<html lang="zh-CN">/)
    assert.match(zh.text, />概览</)
    assert.equal(zh.headers.get('vary'), 'Accept-Language')
    assert.match(await page('/console/users?lang=zh-CN'), /搜索用户/)
    const en = await page('/console')
    for (const label of ['Overview', 'Users', 'Events', 'Mail', 'Audit', 'Sign out']) {
      assert.ok(en.includes(`>${label}</`), label)
    }
    assert.match(en, /<a class="skip" href="#main">Skip to content<\/a>/)
    assert.match(en, /Signed in as <strong>alice<\/strong> · <span class="role">admin<\/span>/)
  })

  it('serves its assets under content-hashed names, cacheable for a year, with validators', async () => {
    const html = await page('/console')
    const css = /href="(\/console\/assets\/console\.[0-9a-f]{12}\.css)"/.exec(html)?.[1]
    const js = /src="(\/console\/assets\/console\.[0-9a-f]{12}\.js)"/.exec(html)?.[1]
    assert.ok(css && js)
    for (const path of [css, js]) {
      const answer = await getPage(url(path), null)
      assert.equal(answer.status, 200)
      assert.equal(answer.headers.get('cache-control'), 'public, max-age=31536000, immutable')
      const etag = answer.headers.get('etag') ?? ''
      assert.match(etag, /^"[0-9a-f]{12}"$/)
      assert.equal((await getPage(url(path), null, { 'if-none-match': etag })).status, 304)
    }
  })
})
