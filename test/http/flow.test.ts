import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { call, MEDIA_TYPE } from '../helpers/service.js'
import {
  CLIENT_ID,
  decideAtProvider,
  followCallback,
  openLink,
  registerMessenger,
  requestConfirmationLink,
  sessionOf,
  startStack,
  type Stack,
} from '../helpers/stack.js'

describe('the whole flow, tier 1 to tier 2 to logout', () => {
  let stack: Stack
  before(async () => {
    stack = await startStack()
  })
  after(() => stack.close())

  it('registers, links the university account through the emailed link, and logs out', async () => {
    const user = await registerMessenger(stack)
    assert.match(user.sessionKey, /^[A-Za-z0-9_-]{43}$/)

    const tier1 = await sessionOf(stack, user.sessionKey)
    assert.equal(tier1.status, 200)
    assert.equal(tier1.headers.get('content-type'), MEDIA_TYPE)
    assert.deepEqual(
      Object.keys(tier1.body).sort(),
      ['appId', 'expiresAt', 'openId', 'platform', 'sessionId', 'tier'],
      tier1.text,
    )
    assert.equal(tier1.body.openId, user.openId)
    assert.equal(tier1.body.tier, 'messenger-registered')

    const link = await requestConfirmationLink(stack, user.sessionKey, 'student@example.edu')
    assert.ok(
      link.startsWith(`${stack.service.url}/authorize/university?universityRegistrationCode=`),
    )

    const opened = await openLink(link)
    assert.equal(opened.status, 301)
    assert.equal(
      opened.location,
      `${stack.providersUrl}/_sandbox/university/authorise?client_id=${CLIENT_ID}&state=${user.openId}`,
    )
    assert.equal(opened.headers.get('cache-control'), 'no-cache, no-store, must-revalidate')
    assert.equal(opened.headers.get('pragma'), 'no-cache')
    assert.equal(opened.headers.get('expires'), '0')
    assert.equal(opened.headers.get('referrer-policy'), 'no-referrer')

    const page = await fetch(opened.location)
    const html = await page.text()
    assert.match(html, /Allow/)
    assert.match(html, /Deny/)

    const callback = await decideAtProvider(stack, user.openId, 'allow')
    const done = await followCallback(callback, opened.cookie)
    assert.equal(done.status, 200)
    assert.match(done.text, /University account linked/)

    const tier2 = await sessionOf(stack, user.sessionKey)
    assert.equal(tier2.body.tier, 'university-registered')

    const logout = await call(`${stack.service.url}/logout`, {
      method: 'POST',
      headers: { authorization: user.sessionKey },
    })
    assert.equal(logout.status, 200)
    assert.deepEqual(logout.body, {})
    assert.equal((await sessionOf(stack, user.sessionKey)).status, 401)
  })
})
