import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { confirmationEmail, describeDuration } from '../../src/university/confirmation-email.js'
import { authorizeLocation } from '../../src/university/uclapi-protocol.js'

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
    assert.ok(mail.html.includes('a&amp;b=&quot;c&quot;'))
    assert.ok(!mail.html.includes('"c"'))
  })
})

describe('the redirect to the identity provider', () => {
  it('appends client_id and state to the configured URL exactly as written', () => {
    assert.equal(
      authorizeLocation('http://127.0.0.1:5000', 'client', 'o-1_x'),
      'http://127.0.0.1:5000?client_id=client&state=o-1_x',
    )
    assert.equal(
      authorizeLocation('https://uclapi.com/oauth/authorise/', 'c d', 'a&b'),
      'https://uclapi.com/oauth/authorise/?client_id=c%20d&state=a%26b',
    )
    assert.equal(
      authorizeLocation('https://idp.example/authorize?prompt=login', 'c', 's'),
      'https://idp.example/authorize?prompt=login&client_id=c&state=s',
    )
  })
})
