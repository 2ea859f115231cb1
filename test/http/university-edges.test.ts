import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { call } from '../helpers/service.js'
import { startSmtpSink } from '../helpers/smtp-sink.js'
import {
  openLink,
  registerMessenger,
  requestConfirmationLink,
  startStack,
  type Stack,
} from '../helpers/stack.js'

const NO_CACHE = {
  'cache-control': 'no-cache, no-store, must-revalidate',
  pragma: 'no-cache',
  expires: '0',
}

describe('tier 2 edges', () => {
  let stack: Stack
  before(async () => {
    stack = await startStack()
  })
  after(() => stack.close())

  it('keeps every answer of the emailed link out of caches, the 400 included', async () => {
    const response = await call(`${stack.service.url}/authorize/university`)
    assert.equal(response.status, 400)
    for (const [name, value] of Object.entries(NO_CACHE))
      assert.equal(response.headers.get(name), value, name)
  })

  it('accepts a code exactly 30 minutes old and refuses it a millisecond later', async () => {
    const user = await registerMessenger(stack)
    const link = await requestConfirmationLink(stack, user.sessionKey, 'boundary@example.edu')
    stack.service.clock.advance(30 * 60_000)
    assert.equal((await openLink(link)).status, 301)
    stack.service.clock.advance(1)
    assert.equal((await openLink(link)).status, 401)
  })

  it('does not deliver the mail of a superseded code that was still queued', async () => {
    await stack.smtp.stop()
    const user = await registerMessenger(stack)
    const ask = (email: string) =>
      call(`${stack.service.url}/register/university`, {
        method: 'POST',
        headers: { authorization: user.sessionKey },
        json: { email },
      })
    assert.equal((await ask('first@example.edu')).status, 200)
    assert.equal((await ask('second@example.edu')).status, 200)
    // Let the delivery rounds the requests kicked off fail while SMTP is still down.
    await stack.service.mailWorker.runOnce()
    const rows = await stack.service.db.kysely
      .selectFrom('mail_outbox')
      .select(['recipient', 'abandoned_at', 'text_body'])
      .where('recipient', 'in', ['first@example.edu', 'second@example.edu'])
      .orderBy('recipient')
      .execute()
    assert.equal(rows[0].recipient, 'first@example.edu')
    assert.notEqual(rows[0].abandoned_at, null)
    assert.equal(rows[0].text_body, null)
    assert.equal(rows[1].abandoned_at, null)

    const sink = await startSmtpSink(stack.smtp.port)
    try {
      stack.service.clock.advance(10 * 60_000)
      await stack.service.mailWorker.runOnce()
      await sink.waitFor((m) => JSON.stringify(m.to).includes('second@example.edu'))
      assert.equal(
        sink.messages.filter((m) => JSON.stringify(m.to).includes('first@example.edu')).length,
        0,
      )
    } finally {
      await sink.stop()
    }
  })
})
