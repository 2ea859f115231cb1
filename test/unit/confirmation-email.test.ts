import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { confirmationEmail, describeDuration } from '../../src/university/confirmation-email.js'

describe('the confirmation email', () => {
  it('says how long the link works, in words', () => {
    assert.equal(describeDuration(30 * 60_000), '30 minutes')
    assert.equal(describeDuration(60_000), '1 minute')
    assert.equal(describeDuration(90_000), '1 minute 30 seconds')
    assert.equal(describeDuration(20_000), '20 seconds')
    assert.equal(describeDuration(2 * 3_600_000), '2 hours')
  })

  it('escapes the link in its HTML part and carries it verbatim in the text part', () => {
    const link =
      'https://campusgate.example/authorize/university?universityRegistrationCode=a&b="c"'
    const mail = confirmationEmail('s@example.edu', link, 30 * 60_000)
    assert.ok(mail.text.includes(link))
    assert.ok(mail.html.includes('a&#38;b=&#34;c&#34;'))
    assert.ok(!mail.html.includes('"c"'))
  })
})
