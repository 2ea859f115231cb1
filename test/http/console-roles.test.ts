import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { loadConfig } from '../../src/config.js'
import {
  campusgate,
  consoleLink,
  fromConsole,
  getPage,
  signIn,
  TEST_KEY,
} from '../helpers/console.js'
import { registerUniversity, sessionOf, startStack, type Stack } from '../helpers/stack.js'

/**
 * docs/console.md, "Roles": a viewer sees every page and no action; the server refuses its
 * actions however they are sent (403 @forbidden/operator-role), and says so in the audit trail.
 */
describe('the operator console: roles', () => {
  let stack: Stack

  before(async () => {
    stack = await startStack({ DATA_ENCRYPTION_KEY: TEST_KEY })
    stack.service.clock.advance(Date.now() - stack.service.clock.now().getTime())
  })
  after(() => stack.close())

  it('makes links for a viewer or an admin (the default), and refuses any other role', async () => {
    const viewer = await campusgate(
      stack.service,
      'console',
      'link',
      '--name',
      'vera',
      '--role',
      'viewer',
    )
    assert.equal(viewer.code, 0, viewer.err)
    assert.match(viewer.err, /for vera \(viewer\)/)
    const admin = await campusgate(stack.service, 'console', 'link', '--name', 'ada')
    assert.match(admin.err, /for ada \(admin\)/)
    const wrong = await campusgate(stack.service, 'console', 'link', '--role', 'root')
    assert.equal(wrong.code, 2)
    assert.match(wrong.err, /--role must be admin or viewer/)
  })

  it('shows a viewer every page with its role in the header and no action button', async () => {
    const user = await registerUniversity(stack, 'viewed@example.edu')
    const vera = await signIn(
      stack.service,
      (await consoleLink(stack.service, 'vera', 'viewer')).token,
    )
    const path = `/console/users/${encodeURIComponent(user.openId)}`
    for (const page of [
      '/console',
      '/console/users',
      path,
      '/console/events?state=dead',
      '/console/mail',
      '/console/audit',
    ]) {
      const answer = await getPage(`${stack.service.url}${page}`, vera.cookie)
      assert.equal(answer.status, 200, page)
      assert.match(answer.text, /<span class="role">viewer \(read only\)<\/span>/, page)
      // Only the sign-out form is a POST.
      const forms = [...answer.text.matchAll(/<form method="post" action="([^"]+)"/g)].map(
        (m) => m[1],
      )
      assert.deepEqual(forms, ['/console/sign-out'], page)
    }
  })

  it("refuses a viewer's forged action with a valid CSRF token: 403 operator-role, nothing done, audited", async () => {
    const user = await registerUniversity(stack, 'forged@example.edu')
    const vera = await signIn(
      stack.service,
      (await consoleLink(stack.service, 'vera', 'viewer')).token,
    )
    const path = `/console/users/${encodeURIComponent(user.openId)}`
    for (const [action, fields] of [
      [`${path}/revoke`, { session: 'all' }],
      [`${path}/unlink`, {}],
      [`${path}/erase`, { confirm: user.openId }],
      [`${path}/data`, {}],
      [`${path}/suspend`, { reason: 'forged' }],
      [`${path}/restore`, {}],
      ['/console/events/retry-all', { endpoint: '0123456789abcdef' }],
      ['/console/events/some-id/retry', {}],
      ['/console/mail/some-id/retry', {}],
    ] as const) {
      const json = await fromConsole(stack.service, vera, action, fields, {
        accept: 'application/json',
      })
      assert.equal(json.status, 403, action)
      assert.deepEqual(JSON.parse(json.text), { error: '@forbidden/operator-role' })
      const page = await fromConsole(stack.service, vera, action, fields)
      assert.equal(page.status, 403, action)
      assert.match(page.text, /Not allowed for your role/)
      assert.match(page.text, /@forbidden\/operator-role/)
    }
    const session = await sessionOf(stack, user.sessionKey)
    assert.equal(session.body.tier, 'university-registered', 'nothing was revoked or unlinked')
    const refused = await stack.service.db.kysely
      .selectFrom('audit_events')
      .select(['actor', 'detail'])
      .where('type', '=', 'console-action-refused')
      .execute()
    assert.ok(refused.length >= 18)
    assert.ok(refused.every((row) => row.actor === 'console:vera'))
    assert.deepEqual(JSON.parse(refused[0].detail ?? '{}'), {
      action: `${path}/revoke`,
      role: 'viewer',
      reason: 'operator-role',
    })
    // Signing out is no action on anyone's data: a viewer may.
    assert.equal((await fromConsole(stack.service, vera, '/console/sign-out')).status, 303)
  })

  it("answers a viewer's POST to a path that is no console action 404, recording nothing", async () => {
    const vera = await signIn(
      stack.service,
      (await consoleLink(stack.service, 'vera', 'viewer')).token,
    )
    const refusals = async () =>
      Number(
        (
          await stack.service.db.kysely
            .selectFrom('audit_events')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      )
    const before = await refusals()
    for (const path of [
      '/console/made-up',
      '/console/users/someone/unlink/again',
      '/console/events/retry-everything/now',
      '/console/audit',
    ]) {
      const answer = await fromConsole(stack.service, vera, path)
      assert.equal(answer.status, 404, path)
      assert.match(answer.text, /No such page/)
    }
    assert.equal(await refusals(), before, 'no audit row')
  })

  it('audits the role of every link and sign-in', async () => {
    await signIn(stack.service, (await consoleLink(stack.service, 'vera', 'viewer')).token)
    const newest = (type: string) =>
      stack.service.db.kysely
        .selectFrom('audit_events')
        .select('detail')
        .where('type', '=', type)
        .orderBy('at', 'desc')
        .orderBy('id', 'desc')
        .executeTakeFirstOrThrow()
    assert.deepEqual(JSON.parse((await newest('console-sign-in')).detail ?? '{}'), {
      method: 'link',
      role: 'viewer',
    })
    assert.deepEqual(JSON.parse((await newest('console-action')).detail ?? '{}'), {
      action: 'link',
      operator: 'vera',
      role: 'viewer',
    })
  })

  it('reads CONSOLE_OPERATORS entries ending in :viewer as viewers', () => {
    const config = loadConfig({ CONSOLE_OPERATORS: 'ada@uni.example, vera-0001:viewer, x:admin' })
    assert.deepEqual(config.console.operators, [
      { id: 'ada@uni.example', role: 'admin' },
      { id: 'vera-0001', role: 'viewer' },
      { id: 'x', role: 'admin' },
    ])
  })
})
