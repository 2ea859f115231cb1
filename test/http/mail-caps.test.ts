import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { call, MEDIA_TYPE } from '../helpers/service.js'
import { registerMessenger, startStack, type Stack } from '../helpers/stack.js'

const HOUR = 3_600_000

function postEmail(stack: Stack, sessionKey: string, email: string) {
  return call(`${stack.service.url}/register/university`, {
    method: 'POST',
    headers: { authorization: sessionKey },
    json: { email },
  })
}

async function queuedMails(stack: Stack): Promise<number> {
  const rows = await stack.service.db.kysely.selectFrom('mail_outbox').select('id').execute()
  return rows.length
}

function assertCapped(response: Awaited<ReturnType<typeof call>>, maxSeconds: number): void {
  assert.equal(response.status, 429, response.text)
  assert.equal(response.headers.get('content-type'), MEDIA_TYPE)
  assert.deepEqual(response.body, { error: '@too-many-requests/rate-limit-exceeded' })
  const retryAfter = Number(response.headers.get('retry-after'))
  assert.ok(retryAfter >= 1 && retryAfter <= maxSeconds, String(retryAfter))
}

describe('confirmation mail caps (MAIL_LIMIT_PER_USER, MAIL_LIMIT_PER_RECIPIENT)', () => {
  let stack: Stack
  before(async () => {
    stack = await startStack({ MAIL_LIMIT_PER_USER: '3', MAIL_LIMIT_PER_RECIPIENT: '2' })
  })
  after(() => stack.close())

  it('answers 429 with Retry-After once a user asked for MAIL_LIMIT_PER_USER mails this hour, queuing nothing', async () => {
    const { sessionKey } = await registerMessenger(stack)
    for (const n of [1, 2, 3]) {
      const response = await postEmail(stack, sessionKey, `user-cap-${n}@example.edu`)
      assert.equal(response.status, 200, response.text)
    }
    const queued = await queuedMails(stack)
    assertCapped(await postEmail(stack, sessionKey, 'user-cap-4@example.edu'), 3600)
    assert.equal(await queuedMails(stack), queued)

    stack.service.clock.advance(HOUR - 2000)
    assertCapped(await postEmail(stack, sessionKey, 'user-cap-5@example.edu'), 2)
    stack.service.clock.advance(3000)
    assert.equal((await postEmail(stack, sessionKey, 'user-cap-6@example.edu')).status, 200)
  })

  it('answers 429 once an address got MAIL_LIMIT_PER_RECIPIENT mails this hour, whoever asked', async () => {
    const first = await registerMessenger(stack)
    const second = await registerMessenger(stack)
    const third = await registerMessenger(stack)
    assert.equal((await postEmail(stack, first.sessionKey, 'victim@example.edu')).status, 200)
    assert.equal((await postEmail(stack, second.sessionKey, 'Victim@Example.EDU')).status, 200)
    const queued = await queuedMails(stack)
    assertCapped(await postEmail(stack, third.sessionKey, 'victim@example.edu'), 3600)
    assert.equal(await queuedMails(stack), queued)
    // Another address is not affected.
    assert.equal((await postEmail(stack, third.sessionKey, 'other@example.edu')).status, 200)
  })
})

describe('UNIVERSITY_EMAIL_DOMAINS', () => {
  let stack: Stack
  before(async () => {
    stack = await startStack({ UNIVERSITY_EMAIL_DOMAINS: 'ucl.ac.uk, example.ac.uk' })
  })
  after(() => stack.close())

  it('accepts the domains and their subdomains', async () => {
    const { sessionKey } = await registerMessenger(stack)
    for (const email of ['a@ucl.ac.uk', 'b@cs.ucl.ac.uk', 'c@UCL.AC.UK', 'd@example.ac.uk']) {
      assert.equal((await postEmail(stack, sessionKey, email)).status, 200, email)
    }
  })

  it('answers 400 email-domain-not-allowed for any other address, queuing nothing', async () => {
    const { sessionKey } = await registerMessenger(stack)
    const queued = await queuedMails(stack)
    for (const email of ['a@gmail.com', 'b@evilucl.ac.uk', 'c@ucl.ac.uk.evil.example']) {
      const response = await postEmail(stack, sessionKey, email)
      assert.equal(response.status, 400, email)
      assert.equal(response.headers.get('content-type'), MEDIA_TYPE)
      assert.deepEqual(response.body, { error: '@bad-request/email-domain-not-allowed' })
    }
    assert.equal(await queuedMails(stack), queued)
  })
})

describe('the confirmation email against phishing', () => {
  let stack: Stack
  before(async () => {
    stack = await startStack()
  })
  after(() => stack.close())

  it('says what asked for it and when, and that ignoring it changes nothing', async () => {
    const { sessionKey } = await registerMessenger(stack)
    const before = stack.smtp.messages.length
    assert.equal((await postEmail(stack, sessionKey, 'member@example.edu')).status, 200)
    const mail = await stack.smtp.waitFor((m) => stack.smtp.messages.indexOf(m) >= before)
    const text = mail.text ?? ''
    const at = stack.service.clock.now()
    const time = at.toISOString().slice(11, 16)
    assert.match(text, new RegExp(`On 1 January 2026 at ${time} UTC`))
    assert.match(text, /university community mini-program asked to link a university account/)
    assert.match(text, /member@example\.edu/)
    assert.match(text, /ignore this email: nothing changes unless you open the link/)
    assert.match(mail.html as string, /nothing changes unless you open the link/)
  })
})
