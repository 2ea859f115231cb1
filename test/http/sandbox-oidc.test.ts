import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { SANDBOX_APP } from '../../src/sandbox/routes.js'
import { call, startService, type RunningService } from '../helpers/service.js'
import { linkIn, startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'
import { followCallback, openLink } from '../helpers/stack.js'

/**
 * `npm start` with UNIVERSITY_PROTOCOL=oidc and no provider configured: the sandbox is an OpenID
 * Provider at /_sandbox/oidc, and the whole flow works against it.
 */
describe('the sandbox in OpenID Connect mode', () => {
  let service: RunningService
  let smtp: SmtpSink
  before(async () => {
    smtp = await startSmtpSink()
    service = await startService({ UNIVERSITY_PROTOCOL: 'oidc', SMTP_URL: smtp.url })
  })
  after(async () => {
    await service.close()
    await smtp.stop()
  })

  async function userWithLink(): Promise<{ sessionKey: string; link: string }> {
    const login = await call(`${service.url}/_sandbox/messenger/login-codes`, { method: 'POST' })
    const registered = await call(`${service.url}/register/messenger`, {
      method: 'POST',
      json: { appId: SANDBOX_APP.appId, appSecret: SANDBOX_APP.appSecret, code: login.body.code },
    })
    const sessionKey = registered.body.sessionKey as string
    const before = smtp.messages.length
    const email = `sandbox-${Math.random().toString(36).slice(2)}@example.edu`
    const asked = await call(`${service.url}/register/university`, {
      method: 'POST',
      headers: { authorization: sessionKey },
      json: { email },
    })
    assert.equal(asked.status, 200, asked.text)
    const mail = await smtp.waitFor(
      (m) => smtp.messages.indexOf(m) >= before && JSON.stringify(m.to).includes(email),
    )
    return { sessionKey, link: linkIn(mail) }
  }

  /** The Allow page's form, submitted as a browser would. */
  async function decide(location: string, decision: 'allow' | 'deny', member: string) {
    const page = await fetch(location)
    assert.equal(page.status, 200)
    const html = await page.text()
    assert.match(html, /University sign-in \(sandbox\)/)
    assert.match(html, /Ada Lovelace/)
    const form = new URLSearchParams(new URL(location).searchParams)
    form.delete('scope')
    form.set('decision', decision)
    form.set('member', member)
    const response = await fetch(`${service.url}/_sandbox/oidc/authorize/decision`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
    })
    assert.equal(response.status, 302)
    return response.headers.get('location')!
  }

  it('links the member chosen on the Allow page', async () => {
    const { sessionKey, link } = await userWithLink()
    const opened = await openLink(link)
    assert.equal(opened.status, 301)
    assert.ok(opened.location.startsWith(`${service.url}/_sandbox/oidc/authorize?client_id=`))
    const callback = await decide(opened.location, 'allow', 'ada')
    assert.equal(new URL(callback).searchParams.get('iss'), `${service.url}/_sandbox/oidc`)
    const done = await followCallback(callback, opened.cookie)
    assert.match(done.text, /University account linked/)
    assert.match(done.text, /Ada Lovelace/)
    const session = await call(`${service.url}/session`, { headers: { authorization: sessionKey } })
    assert.equal(session.body.tier, 'university-registered')
    assert.equal(session.body.university.subject, 'ALOVE01')
    assert.equal(session.body.university.isStudent, true)
  })

  it('declines on Deny', async () => {
    const { sessionKey, link } = await userWithLink()
    const opened = await openLink(link)
    const callback = await decide(opened.location, 'deny', 'own')
    assert.equal(new URL(callback).searchParams.get('error'), 'access_denied')
    assert.match((await followCallback(callback, opened.cookie)).text, /Authorization declined/)
    const session = await call(`${service.url}/session`, { headers: { authorization: sessionKey } })
    assert.equal(session.body.tier, 'messenger-registered')
  })
})
