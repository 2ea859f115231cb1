import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { hashSecret } from '../../src/lib/secrets.js'
import { call, MEDIA_TYPE } from '../helpers/service.js'
import { linkIn, recipients } from '../helpers/smtp-sink.js'
import {
  codeOf,
  registerMessenger,
  requestConfirmationLink,
  startStack,
  userRowOf,
  type Stack,
} from '../helpers/stack.js'

type Reply = Awaited<ReturnType<typeof call>>

function assertError(response: Reply, status: number, code: string): void {
  assert.equal(response.status, status, response.text)
  assert.equal(response.headers.get('content-type'), MEDIA_TYPE)
  assert.deepEqual(response.body, { error: code })
}

describe('POST /register/university', () => {
  let stack: Stack
  let sessionKey: string
  let url: string

  before(async () => {
    stack = await startStack()
    url = `${stack.service.url}/register/university`
    ;({ sessionKey } = await registerMessenger(stack))
  })
  after(() => stack.close())

  function post(json: unknown, headers: Record<string, string> = { authorization: sessionKey }) {
    return call(url, { method: 'POST', headers, json })
  }

  it('answers 200 {} and mails a text and HTML confirmation that both carry the link', async () => {
    const before = stack.smtp.messages.length
    const response = await post({ email: 'alice@example.edu' })
    assert.equal(response.status, 200, response.text)
    assert.equal(response.headers.get('content-type'), MEDIA_TYPE)
    assert.deepEqual(response.body, {})

    const mail = await stack.smtp.waitFor(
      (m) =>
        stack.smtp.messages.indexOf(m) >= before && recipients(m).includes('alice@example.edu'),
    )
    assert.deepEqual(recipients(mail), ['alice@example.edu'])
    assert.equal(mail.subject, 'Confirm your university registration')
    const link = linkIn(mail)
    const prefix = `${stack.service.url}/authorize/university?universityRegistrationCode=`
    assert.ok(link.startsWith(prefix), link)
    assert.match(link.slice(prefix.length), /^[A-Za-z0-9_-]{43}$/)
    assert.ok(mail.text?.includes(link), 'text part carries the link')
    assert.match(mail.text ?? '', /The link is valid for 30 minutes\./)
    assert.equal(typeof mail.html, 'string', 'an HTML part is present')
    assert.ok((mail.html as string).includes(`href="${link}"`), 'HTML part links to it')
  })

  for (const [what, body] of [
    ['is absent', {}],
    ['is null', { email: null }],
    ['is a number', { email: 42 }],
    ['is an empty string', { email: '' }],
  ] as const) {
    it(`answers 400 missing-required-keys when email ${what}`, async () => {
      assertError(await post(body), 400, '@bad-request/missing-required-keys')
    })
  }

  it('answers 400 missing-required-keys when there is no body at all', async () => {
    const response = await call(url, { method: 'POST', headers: { authorization: sessionKey } })
    assertError(response, 400, '@bad-request/missing-required-keys')
  })

  for (const [what, email] of [
    ['is not an address', 'not-an-email'],
    ['is 300 characters long', `${'a'.repeat(288)}@example.edu`], // 288 + 12
    ['smuggles a header line', 'alice@example.edu\r\nBcc: mallory@example.com'],
    ['names two recipients', 'alice@example.edu,mallory@example.com'],
  ] as const) {
    it(`answers 400 invalid-email when email ${what}, and sends nothing`, async () => {
      await stack.service.mailWorker.runOnce()
      const sent = stack.smtp.messages.length
      assertError(await post({ email }), 400, '@bad-request/invalid-email')
      await stack.service.mailWorker.runOnce()
      assert.equal(stack.smtp.messages.length, sent)
    })
  }

  it('answers 403 missing-authorization-header without an Authorization header', async () => {
    assertError(
      await post({ email: 'alice@example.edu' }, {}),
      403,
      '@forbidden/missing-authorization-header',
    )
  })

  it('answers 403 missing-authorization-header before looking at a missing body', async () => {
    assertError(await call(url, { method: 'POST' }), 403, '@forbidden/missing-authorization-header')
  })

  it('answers 401 invalid-session-key for a key the service never issued', async () => {
    const unknown = { authorization: 'A'.repeat(43) }
    assertError(
      await post({ email: 'alice@example.edu' }, unknown),
      401,
      '@unauthorized/invalid-session-key',
    )
  })

  it('answers 401 invalid-session-key for the key of a session that was logged out', async () => {
    const user = await registerMessenger(stack)
    const logout = await call(`${stack.service.url}/logout`, {
      method: 'POST',
      headers: { authorization: user.sessionKey },
    })
    assert.equal(logout.status, 200)
    const response = await post({ email: 'alice@example.edu' }, { authorization: user.sessionKey })
    assertError(response, 401, '@unauthorized/invalid-session-key')
  })

  it('accepts the session key as "Bearer <key>"', async () => {
    const response = await post(
      { email: 'bearer@example.edu' },
      { authorization: `Bearer ${sessionKey}` },
    )
    assert.equal(response.status, 200, response.text)
    assert.deepEqual(response.body, {})
  })

  it('stores the registration code only as its SHA-256, and one code per user', async () => {
    const user = await registerMessenger(stack)
    await requestConfirmationLink(stack, user.sessionKey, 'hash-1@example.edu')
    const link = await requestConfirmationLink(stack, user.sessionKey, 'hash-2@example.edu')
    const code = codeOf(link)
    const { id } = await userRowOf(stack, user.openId)

    const all = await stack.service.db.kysely.selectFrom('registration_codes').selectAll().execute()
    assert.ok(!JSON.stringify(all).includes(code), 'the code in clear is nowhere in the table')
    const mine = all.filter((row) => row.user_id === id)
    assert.equal(mine.length, 1, 'the newer code replaced the older one')
    assert.equal(mine[0].code_hash, hashSecret(code))
    assert.equal(mine[0].expires_at - mine[0].created_at, 30 * 60_000)
  })

  it('wipes the mail bodies from the outbox once the mail is delivered', async () => {
    const user = await registerMessenger(stack)
    const link = await requestConfirmationLink(stack, user.sessionKey, 'wiped@example.edu')
    // Chained after the round that delivered the mail, so its bookkeeping is done.
    await stack.service.mailWorker.runOnce()
    const rows = await stack.service.db.kysely
      .selectFrom('mail_outbox')
      .selectAll()
      .where('recipient', '=', 'wiped@example.edu')
      .execute()
    assert.equal(rows.length, 1)
    const row = rows[0]
    assert.equal(row.text_body, null)
    assert.equal(row.html_body, null)
    assert.equal(row.subject, 'Confirm your university registration')
    assert.equal(row.attempts, 1)
    assert.equal(row.last_error, null)
    assert.equal(row.abandoned_at, null)
    assert.notEqual(row.sent_at, null)
    const outbox = await stack.service.db.kysely.selectFrom('mail_outbox').selectAll().execute()
    assert.ok(!JSON.stringify(outbox).includes(codeOf(link)), 'no code left in the outbox')
  })
})
