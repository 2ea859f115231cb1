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
import { linkIn } from '../helpers/smtp-sink.js'
import {
  codeOf,
  registerMessenger,
  registerUniversity,
  startStack,
  type Stack,
} from '../helpers/stack.js'

/**
 * docs/console.md, "What each page shows" and "Downloads": a page past the end is the last
 * one, "Previous" and "Next" stand under a long list too, an erased user is never a link, a user's
 * page shows its mail and asks before "Revoke all sessions", and the users and audit lists
 * download whole as CSV.
 */
describe('the operator console: lists, a user page and downloads', () => {
  let stack: Stack
  let alice: SignedIn

  before(async () => {
    stack = await startStack({ DATA_ENCRYPTION_KEY: TEST_KEY })
    stack.service.clock.advance(Date.now() - stack.service.clock.now().getTime())
    alice = await signIn(stack.service, (await consoleLink(stack.service, 'alice')).token)
  })
  after(() => stack.close())

  const db = () => stack.service.db.kysely
  async function signInAgain() {
    const link = await stack.service.consoleSessions.createLink('alice', 'admin', {
      actor: 'cli:test',
      ip: null,
    })
    alice = await signIn(stack.service, link.token)
  }
  const page = async (path: string) => {
    const answer = await getPage(`${stack.service.url}${path}`, alice.cookie)
    assert.equal(answer.status, 200, `${path}: ${answer.text}`)
    return answer.text
  }
  /** A download as its bytes say it: the byte order mark kept (`text()` would drop it). */
  const download = async (path: string) => {
    const answer = await fetch(`${stack.service.url}${path}`, {
      headers: { cookie: alice.cookie },
      redirect: 'manual',
    })
    const bytes = await answer.arrayBuffer()
    const text = new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes)
    assert.equal(answer.status, 200, `${path}: ${text}`)
    return { headers: answer.headers, text }
  }

  /** `count` users written straight to the table, all created in the same millisecond. */
  /** People written straight into the database, each with one WeChat identity. */
  async function manyUsers(prefix: string, count: number, at: number) {
    const numbered = Array.from({ length: count }, (_, index) => String(index).padStart(5, '0'))
    for (let start = 0; start < numbered.length; start += 200) {
      const batch = numbered.slice(start, start + 200)
      await db()
        .insertInto('users')
        .values(batch.map((n) => ({ id: `${prefix}-id-${n}`, created_at: at, updated_at: at })))
        .execute()
      await db()
        .insertInto('identities')
        .values(
          batch.map((n) => ({
            id: `${prefix}-identity-${n}`,
            user_id: `${prefix}-id-${n}`,
            kind: 'messenger' as const,
            provider: 'wechat',
            realm: '',
            subject: `${prefix}-${n}`,
            union_id: null,
            secret: null,
            email: null,
            name: null,
            is_student: null,
            linked_at: null,
            binding: null,
            created_at: at,
            updated_at: at,
          })),
        )
        .execute()
    }
    return numbered.map((n) => `${prefix}-${n}`)
  }

  it('shows the last page for a page past the end, never an empty one', async () => {
    for (let index = 0; index < 3; index += 1) await registerMessenger(stack, `past-end-${index}`)
    const last = await page('/console/users?q=past-end-&page=9')
    assert.match(last, /1–3 of 3/)
    assert.doesNotMatch(last, /No user matches/)
    const users = Number(
      (
        await db()
          .selectFrom('users')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    )
    const lastPage = Math.ceil(users / 50)
    const far = await page('/console/users?page=999')
    assert.match(far, new RegExp(`${(lastPage - 1) * 50 + 1}–${users} of ${users}`))
    assert.doesNotMatch(far, new RegExp(`of ${users}.*rel="next"`, 's'))
    const audit = await page('/console/audit?page=999999')
    assert.doesNotMatch(audit, /Nothing here/)
    assert.match(audit, /<td data-label="Type">/)
    const user = await page('/console/users/past-end-0?trail=50&events=7&mail=3')
    assert.match(user, /<code>registration<\/code>/, "the user's trail, on its last page")
  })

  it('puts "Previous" and "Next" under a list of more than one page too, named apart', async () => {
    await manyUsers('paged', 120, stack.service.clock.now().getTime())
    const middle = await page('/console/users?q=paged-&page=2')
    assert.match(middle, /51–100 of 120/)
    assert.equal([...middle.matchAll(/rel="next">Next</g)].length, 2)
    assert.equal([...middle.matchAll(/rel="prev">Previous</g)].length, 2)
    assert.match(middle, /<nav class="pager" aria-label="Users: pages">/)
    assert.match(middle, /<nav class="pager below" aria-label="Users: pages, below the list">/)
    const below = middle.indexOf('class="pager below"')
    assert.ok(below > middle.lastIndexOf('</table>'), 'under the list')
    // One page: one pager.
    const short = await page('/console/users?q=paged-00001')
    assert.doesNotMatch(short, /class="pager below"/)
  })

  it('never links an erased user: its events and trail name it as erased', async () => {
    const gone = await registerMessenger(stack)
    const path = `/console/users/${encodeURIComponent(gone.openId)}`
    const erased = await fromConsole(stack.service, alice, `${path}/erase`, {
      confirm: gone.openId,
    })
    assert.equal(erased.status, 303)
    const trail = await page(`/console/audit?openId=${encodeURIComponent(gone.openId)}`)
    assert.match(trail, /<code>erasure<\/code>/)
    assert.ok(!trail.includes(`href="${path}"`), 'no link to a page that is gone')
    assert.ok(trail.includes(`<code>${gone.openId}</code> <span class="muted">(erased)</span>`))
    // A user that exists is a link.
    const user = await registerMessenger(stack)
    const live = await page(`/console/audit?openId=${encodeURIComponent(user.openId)}`)
    assert.ok(live.includes(`href="/console/users/${encodeURIComponent(user.openId)}"`))
  })

  it('asks before "Revoke all sessions", saying the student loses tier 2, and comes back to the page', async () => {
    const user = await registerUniversity(stack, 'confirm@example.edu')
    const path = `/console/users/${encodeURIComponent(user.openId)}`
    const html = await page(`${path}?trail=1`)
    // The button opens the question; it revokes nothing itself.
    assert.match(
      html,
      new RegExp(
        `<form method="get" action="${path}/revoke-all" class="inline"><input type="hidden" name="back" value="${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\?trail=1"><button type="submit">Revoke all sessions</button></form>`,
      ),
    )
    const question = await page(`${path}/revoke-all?back=${encodeURIComponent(`${path}?trail=1`)}`)
    assert.match(question, /<h1>Revoke all sessions\?<\/h1>/)
    assert.match(
      question,
      /The student loses tier 2 \(university-registered\) until they prove membership again/,
    )
    assert.match(question, /The live session ends now/)
    assert.match(question, /name="confirmed" value="yes"/)
    assert.match(
      question,
      new RegExp(`<a class="button secondary" href="${path}\\?trail=1">Cancel</a>`),
    )
    const zh = await page(`${path}/revoke-all?lang=zh-CN`)
    assert.match(zh, /该学生将失去第 2 级（已关联大学账号），直到再次证明其成员身份/)
    const revoked = await fromConsole(stack.service, alice, `${path}/revoke`, {
      session: 'all',
      confirmed: 'yes',
      back: `${path}?trail=1`,
    })
    assert.equal(revoked.headers.get('location'), `${path}?trail=1&done=revokedAll&count=1`)
    assert.match(await page(`${path}?done=revokedAll&count=1`), /Every session is revoked: 1\./)
  })

  it("shows a user's mail, sent, pending and dead, with no body or link", async () => {
    const user = await registerUniversity(stack, 'history@example.edu')
    const sent = stack.smtp.messages.at(-1)
    assert.ok(sent)
    // Mail that cannot go out: pending, then dead once its link expired.
    await stack.smtp.stop()
    await stack.service.mailWorker.stop()
    const asked = await call(`${stack.service.url}/register/university`, {
      method: 'POST',
      headers: { authorization: user.sessionKey },
      json: { email: 'waiting@example.edu' },
    })
    assert.equal(asked.status, 200, asked.text)
    await stack.service.mailWorker.runOnce()
    const path = `/console/users/${encodeURIComponent(user.openId)}`
    const pending = await page(path)
    assert.match(pending, /<h2>Mail history<\/h2>/)
    assert.match(pending, /1–2 of 2/)
    assert.match(pending, /<span class="mail-sent">Sent<\/span>/)
    assert.match(pending, /<span class="mail-queued">Pending<\/span>/)
    assert.ok(pending.includes('waiting@example.edu'))
    stack.service.clock.advance(31 * 60_000)
    await signInAgain()
    await stack.service.mailWorker.runOnce()
    const dead = await page(path)
    assert.match(dead, /<span class="mail-abandoned">Dead \(given up\)<\/span>/)
    const link = linkIn(sent)
    assert.ok(!dead.includes(link) && !dead.includes(codeOf(link)), 'no link or code')
    assert.ok(!dead.includes('universityRegistrationCode'))
    // The text part's first line is the subject, which the list shows; the next is the body.
    const body = (sent.text ?? '').split('\n')[2] ?? ''
    assert.ok(body !== '' && !dead.includes(body.trim()), 'no body')
    const zh = await page(`${path}?lang=zh-CN`)
    assert.match(zh, /<h2>邮件记录<\/h2>/)
    assert.match(zh, /已放弃/)
  })

  it('downloads the users list as CSV: what the filters show, every page, no secret, no formula', async () => {
    await signInAgain()
    const at = stack.service.clock.now().getTime()
    const made = await manyUsers('csv', 1_234, at)
    await db()
      .updateTable('identities')
      .set({ union_id: '-2+3' })
      .where('subject', '=', 'csv-00007')
      .execute()
    await db()
      .insertInto('identities')
      .values({
        id: 'csv-university-00007',
        user_id: 'csv-id-00007',
        kind: 'university',
        provider: 'oidc',
        realm: 'https://idp.example.edu',
        subject: '@SUM(A1)',
        union_id: null,
        secret: 'secret-token-value',
        email: 'Someone, "Quoted"\r\n@example.edu',
        name: '=HYPERLINK("http://evil.example","click")',
        is_student: null,
        linked_at: null,
        binding: 'binding-hash-value',
        created_at: at,
        updated_at: at,
      })
      .execute()
    const answer = await download('/console/users.csv?q=CSV-&sort=created')
    assert.match(answer.headers.get('content-type') ?? '', /^text\/csv; charset=utf-8/)
    assert.match(
      answer.headers.get('content-disposition') ?? '',
      /^attachment; filename="campusgate-users-\d{4}-\d\d-\d\d\.csv"$/,
    )
    assert.equal(answer.headers.get('cache-control'), 'no-store')
    const text = answer.text
    assert.ok(text.startsWith('\ufeffopenId,unionId,universitySubject,universityEmail,'))
    const lines = text.slice(1).split('\r\n')
    assert.equal(lines.at(-1), '', 'every line ends in CRLF')
    // Every user of the search, once, across batches of ties (one millisecond for them all).
    const openIds = lines.slice(1, -1).map((line) => line.split(',')[0])
    // The quoted address holds a CRLF: the user's record spans two lines of the text.
    assert.equal(new Set(openIds.filter((id) => id.startsWith('csv-'))).size, made.length)
    assert.ok(!openIds.some((id) => id.startsWith('paged-')), 'only what the search finds')
    const row = text.slice(
      text.indexOf('csv-00007,'),
      text.indexOf('\r\ncsv-', text.indexOf('csv-00007,')),
    )
    assert.equal(
      row,
      `csv-00007,'-2+3,'@SUM(A1),"Someone, ""Quoted""\r\n@example.edu","'=HYPERLINK(""http://evil.example"",""click"")",none,${new Date(at).toISOString()},,`,
    )
    for (const secret of ['secret-token-value', 'binding-hash-value']) {
      assert.ok(!text.includes(secret), 'no secret')
    }
    const audited = await db()
      .selectFrom('audit_events')
      .select(['actor', 'detail'])
      .where('type', '=', 'console-action')
      .orderBy('at', 'desc')
      .orderBy('id', 'desc')
      .executeTakeFirstOrThrow()
    assert.equal(audited.actor, 'console:alice')
    assert.deepEqual(JSON.parse(audited.detail ?? '{}'), {
      action: 'download-users',
      search: 'CSV-',
      sort: 'created',
    })
    // The list page offers it with its filters.
    assert.match(
      await page('/console/users?q=csv-&tier=none'),
      /<a href="\/console\/users\.csv\?q=csv-&amp;tier=none" download>Download CSV/,
    )
    // Last active first: the same users, in that order's batches.
    const active = await download('/console/users.csv?q=csv-&sort=active')
    const activeIds = active.text.split('\r\n').filter((line) => line.startsWith('csv-'))
    assert.equal(new Set(activeIds.map((line) => line.split(',')[0])).size, made.length)
  })

  it('downloads the audit trail as CSV: what the filter shows, every page, the operator in any case', async () => {
    const at = stack.service.clock.now().getTime()
    const rows = Array.from({ length: 1_111 }, (_, index) => ({
      id: `zz-csv-${String(index).padStart(5, '0')}`,
      at,
      type: 'console-action',
      actor: 'console:Bulk',
      user_id: null,
      open_id: null,
      ip: index === 5 ? '=1+1' : '10.0.0.1',
      detail: JSON.stringify({ action: 'test', index }),
    }))
    for (let start = 0; start < rows.length; start += 200) {
      await db()
        .insertInto('audit_events')
        .values(rows.slice(start, start + 200))
        .execute()
    }
    const answer = await download('/console/audit.csv?actor=BULK&type=console-action')
    const lines = answer.text.slice(1).split('\r\n')
    assert.equal(lines[0], 'at,type,actor,openId,ip,detail')
    assert.equal(lines.length, 1 + rows.length + 1)
    // The detail is the last field, quoted (it holds commas and quotes).
    const details = lines.slice(1, -1).map(
      (line) =>
        JSON.parse(line.slice(line.indexOf(',"{') + 2, -1).replaceAll('""', '"')) as {
          index: number
        },
    )
    assert.equal(new Set(details.map((detail) => detail.index)).size, rows.length)
    assert.ok(
      lines.includes(
        `${new Date(at).toISOString()},console-action,console:Bulk,,'=1+1,"{""action"":""test"",""index"":5}"`,
      ),
    )
    const page1 = await page('/console/audit?actor=bulk&type=console-action')
    assert.match(page1, /1–50 of 1111/)
    assert.match(
      page1,
      /<a href="\/console\/audit\.csv\?type=console-action&amp;actor=bulk" download>/,
    )
  })
})
