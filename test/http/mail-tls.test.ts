import assert from 'node:assert/strict'
import { networkInterfaces } from 'node:os'
import { describe, it } from 'node:test'
import { call } from '../helpers/service.js'
import { startSmtpSink } from '../helpers/smtp-sink.js'
import { registerMessenger, startStack } from '../helpers/stack.js'

/** An address of this machine that is not loopback, so campusgate treats the relay as remote. */
function externalAddress(): string | undefined {
  return Object.values(networkInterfaces())
    .flat()
    .find((entry) => entry !== undefined && entry.family === 'IPv4' && !entry.internal)?.address
}

const address = externalAddress()

describe('mail to a relay off this machine', () => {
  it(
    'is never sent in clear: a relay without STARTTLS gets nothing',
    { skip: address === undefined && 'no non-loopback address here' },
    async () => {
      const sink = await startSmtpSink(0, { host: address })
      const stack = await startStack({ SMTP_URL: sink.url })
      try {
        const user = await registerMessenger(stack)
        const response = await call(`${stack.service.url}/register/university`, {
          method: 'POST',
          headers: { authorization: user.sessionKey },
          json: { email: 'member@example.edu' },
        })
        assert.equal(response.status, 200, response.text)
        let row
        for (let i = 0; i < 200; i += 1) {
          row = await stack.service.db.kysely
            .selectFrom('mail_outbox')
            .select(['attempts', 'last_error', 'sent_at'])
            .executeTakeFirstOrThrow()
          if (row.attempts > 0 && row.last_error !== null) break
          await new Promise((resolve) => setTimeout(resolve, 25))
        }
        assert.ok(row !== undefined && row.attempts > 0, 'the worker tried')
        assert.equal(row.sent_at, null)
        assert.match(row.last_error ?? '', /TLS/i)
        assert.equal(sink.messages.length, 0)
      } finally {
        await stack.close()
        await sink.stop()
      }
    },
  )
})
