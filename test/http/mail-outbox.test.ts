import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { randomBytes } from 'node:crypto'
import { createCipher } from '../../src/lib/encryption.js'
import { call } from '../helpers/service.js'
import { linkIn, startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'
import { openLink, registerMessenger, startStack, type Stack } from '../helpers/stack.js'

/** The outbox row of the one mail sent to `recipient`. */
async function outboxRowFor(stack: Stack, recipient: string) {
  const rows = await stack.service.db.kysely
    .selectFrom('mail_outbox')
    .selectAll()
    .where('recipient', '=', recipient)
    .execute()
  assert.equal(rows.length, 1)
  return rows[0]
}

/** POST /register/university for a fresh user; the mail is only queued when SMTP is down. */
async function askForMail(stack: Stack, email: string): Promise<void> {
  const user = await registerMessenger(stack)
  const response = await call(`${stack.service.url}/register/university`, {
    method: 'POST',
    headers: { authorization: user.sessionKey },
    json: { email },
  })
  assert.equal(response.status, 200, response.text)
  assert.deepEqual(response.body, {})
}

function mailsTo(sink: SmtpSink, email: string): number {
  return sink.messages.filter((m) => JSON.stringify(m.to ?? null).includes(email)).length
}

/**
 * A stack per describe whose SMTP server a test stops (`begin`, which hands the stack over) and
 * brings back on the same port (`end`); both go when the describe ends.
 */
function smtpOutage(): { begin(): Promise<Stack>; end(): Promise<SmtpSink> } {
  let stack: Stack
  let revived: SmtpSink | null = null
  let port = 0
  before(async () => {
    stack = await startStack()
  })
  after(async () => {
    await stack.close()
    await revived?.stop()
  })
  return {
    async begin() {
      port = stack.smtp.port
      await stack.smtp.stop()
      return stack
    },
    async end() {
      revived = await startSmtpSink(port)
      return revived
    },
  }
}

describe('mail outbox: SMTP down at first', () => {
  const outage = smtpOutage()

  it('answers 200 while SMTP is down, retries after the backoff and delivers exactly once', async () => {
    const stack = await outage.begin()
    const { service } = stack

    await askForMail(stack, 'late@example.edu')
    // The first round (kicked by the request, or this one) finds SMTP down.
    await service.mailWorker.runOnce()
    const failed = await outboxRowFor(stack, 'late@example.edu')
    assert.equal(failed.attempts, 1)
    assert.equal(typeof failed.last_error, 'string')
    assert.notEqual(failed.last_error, '')
    assert.equal(failed.sent_at, null)
    assert.equal(failed.abandoned_at, null)
    assert.equal(typeof failed.text_body, 'string', 'the mail is kept until delivered')
    assert.equal(failed.next_attempt_at, service.clock.now().getTime() + 2000)

    const revived = await outage.end()
    assert.equal(await service.mailWorker.runOnce(), 0, 'nothing is due before the backoff')
    assert.equal(revived.messages.length, 0)
    assert.equal((await outboxRowFor(stack, 'late@example.edu')).attempts, 1)

    service.clock.advance(failed.next_attempt_at - service.clock.now().getTime())
    await service.mailWorker.runOnce()
    assert.equal(mailsTo(revived, 'late@example.edu'), 1)
    await service.mailWorker.runOnce()
    await service.mailWorker.runOnce()
    assert.equal(revived.messages.length, 1, 'delivered exactly once')

    const sent = await outboxRowFor(stack, 'late@example.edu')
    assert.equal(sent.attempts, 2)
    assert.equal(sent.last_error, null)
    assert.notEqual(sent.sent_at, null)
    assert.equal(sent.text_body, null)
    assert.equal(sent.html_body, null)

    // The late mail still works: its link was valid all along.
    const opened = await openLink(linkIn(revived.messages[0]))
    assert.equal(opened.status, 301)
  })
})

describe('mail outbox: SMTP down for a while with several mails queued', () => {
  const outage = smtpOutage()

  it('delivers every queued mail exactly once after SMTP returns', async () => {
    const stack = await outage.begin()
    const { service } = stack

    const recipients = ['one', 'two', 'three', 'four', 'five'].map((n) => `${n}@example.edu`)
    for (const email of recipients) await askForMail(stack, email)
    // Several rounds while SMTP stays down: each one fails and backs off.
    for (let round = 0; round < 3; round++) {
      await service.mailWorker.runOnce()
      const due = await service.db.kysely
        .selectFrom('mail_outbox')
        .select((e) => e.fn.max('next_attempt_at').as('at'))
        .executeTakeFirstOrThrow()
      service.clock.advance(Number(due.at) - service.clock.now().getTime())
    }
    for (const email of recipients) {
      const row = await outboxRowFor(stack, email)
      assert.ok(row.attempts >= 1, email)
      assert.equal(row.sent_at, null)
    }

    const revived = await outage.end()
    for (let round = 0; round < 4; round++) await service.mailWorker.runOnce()
    for (const email of recipients) {
      assert.equal(mailsTo(revived, email), 1, email)
      const sent = await outboxRowFor(stack, email)
      assert.notEqual(sent.sent_at, null)
      assert.equal(sent.text_body, null)
    }
    assert.equal(revived.messages.length, recipients.length)
  })
})

describe('mail outbox: a mail whose link expires before delivery', () => {
  const outage = smtpOutage()

  it('is abandoned, never sent, and its bodies are wiped', async () => {
    const stack = await outage.begin()
    const { service } = stack
    await askForMail(stack, 'expired@example.edu')
    await service.mailWorker.runOnce()
    const queued = await outboxRowFor(stack, 'expired@example.edu')
    assert.equal(queued.attempts, 1)
    assert.equal(queued.expires_at - queued.created_at, 30 * 60_000)

    service.clock.advance(30 * 60_000)
    const revived = await outage.end()
    assert.equal(await service.mailWorker.runOnce(), 0)
    await service.mailWorker.runOnce()
    assert.equal(revived.messages.length, 0)

    const row = await outboxRowFor(stack, 'expired@example.edu')
    assert.equal(row.text_body, null)
    assert.equal(row.html_body, null)
    assert.equal(row.sent_at, null)
    assert.equal(row.abandoned_at, service.clock.now().getTime())
    assert.match(service.logs(), /mail abandoned: its link expired before delivery/)
  })
})

/** The value of one series of /metrics, 0 when absent. */
async function metric(stack: Stack, series: string): Promise<number> {
  const text = (await call(`${stack.service.url}/metrics`, { headers: { accept: 'text/plain' } }))
    .text
  const line = text.split('\n').find((l) => l.startsWith(`${series} `))
  return line === undefined ? 0 : Number(line.slice(series.length + 1))
}

describe('mail outbox: every abandoned mail shows in the metrics (issue 39)', () => {
  const outage = smtpOutage()

  it('counts a mail whose link expired and one that no configured key opens', async () => {
    const stack = await outage.begin()
    const { service } = stack
    await askForMail(stack, 'expires@example.edu')
    await askForMail(stack, 'unreadable@example.edu')
    await service.mailWorker.runOnce()
    // Sealed under a key since retired: no key of the service opens it.
    const retired = createCipher([randomBytes(32)])
    await service.db.kysely
      .updateTable('mail_outbox')
      .set({ text_body: retired.encrypt('text'), html_body: retired.encrypt('html') })
      .where('recipient', '=', 'unreadable@example.edu')
      .execute()
    await service.db.kysely
      .updateTable('mail_outbox')
      .set({ expires_at: service.clock.now().getTime() })
      .where('recipient', '=', 'expires@example.edu')
      .execute()
    // Past the first retry's backoff, well within the other mail's link.
    service.clock.advance(60_000)
    await outage.end()
    assert.equal(await metric(stack, 'campusgate_mail_abandoned_total'), 0)
    await service.mailWorker.runOnce()
    assert.match(service.logs(), /mail abandoned: no configured key opens it/)
    assert.match(service.logs(), /mail abandoned: its link expired before delivery/)
    assert.equal(await metric(stack, 'campusgate_mail_abandoned_total'), 2)
  })
})

describe('mail outbox: stopping the worker', () => {
  let stack: Stack
  before(async () => {
    stack = await startStack()
  })
  after(() => stack.close())

  it('starts no delivery round once stop() has resolved, and runOnce still delivers', async () => {
    const { mailWorker } = stack.service
    await mailWorker.stop()
    await askForMail(stack, 'stopped@example.edu')
    // A round requested just before stopping (a kick, or start()) must not run after it.
    mailWorker.start()
    mailWorker.kick()
    await mailWorker.stop()
    await new Promise((resolve) => setImmediate(resolve))
    // Chained after any round that did start: it finds the mail still undelivered.
    assert.equal(await mailWorker.runOnce(), 1)
    assert.equal(mailsTo(stack.smtp, 'stopped@example.edu'), 1)
  })
})

describe('mail to a local relay that offers STARTTLS with a self-signed certificate', () => {
  it('is delivered', async () => {
    const relay = await startSmtpSink(0, { starttls: true })
    const stack = await startStack({ SMTP_URL: relay.url })
    try {
      await askForMail(stack, 'tls@example.edu')
      const mail = await relay.waitFor((m) => JSON.stringify(m.to).includes('tls@example.edu'))
      assert.match(linkIn(mail), /universityRegistrationCode=/)
    } finally {
      await stack.close()
      await relay.stop()
    }
  })
})
