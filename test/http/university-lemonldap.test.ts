import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import {
  Browser,
  formAction,
  hiddenFields,
  signInAt,
  startLemonLdap,
} from '../helpers/lemonldap.js'
import type { LemonLdap } from '../helpers/lemonldap.js'
import { call, freePort, startService, type RunningService } from '../helpers/service.js'
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'
import { startProviders, userAskingForTier2, type Providers } from '../helpers/stack.js'
import { TestClock } from '../helpers/clock.js'

// docs/university-providers.md, "CAS" and "SAML": the whole tier 2 round trip through campusgate
// against an independent CAS server and SAML IdP, LemonLDAP::NG from Debian's packages (its demo
// user dwho, "Doctor Who"): the emailed link, the attempt cookie, the callback (for SAML the IdP's
// cross-site post and campusgate's re-post), and the session's tier.

describe('tier 2 through campusgate against LemonLDAP::NG (Debian packages)', () => {
  let llng: LemonLdap
  let providers: Providers
  let smtp: SmtpSink
  let port: number
  let base: string
  before(async () => {
    port = await freePort()
    base = `http://127.0.0.1:${port}`
    llng = await startLemonLdap(base)
    providers = await startProviders(() => `${base}/authorize/university/callback`)
    smtp = await startSmtpSink()
  })
  after(async () => {
    await smtp?.stop()
    await providers?.server.close()
    await llng?.close()
  })

  async function campusgate(env: Record<string, string>): Promise<RunningService> {
    return startService(
      {
        PORT: String(port),
        PUBLIC_BASE_URL: base,
        MESSENGER_API_BASE_URL: providers.env.MESSENGER_API_BASE_URL,
        SMTP_URL: smtp.url,
        ...env,
      },
      // LemonLDAP::NG's assertions are timed by the system clock.
      { clock: new TestClock(Date.now()) },
    )
  }

  async function sessionOf(service: RunningService, sessionKey: string) {
    const session = await call(`${service.url}/session`, { headers: { authorization: sessionKey } })
    assert.equal(session.status, 200)
    return session.body as { tier: string; university?: Record<string, unknown> }
  }

  /** The portal's answers followed until it sends the browser elsewhere or shows a page. */
  async function follow(browser: Browser, answer: Response): Promise<Response> {
    for (let hops = 0; answer.status === 302 && hops < 5; hops++) {
      const next = new URL(answer.headers.get('location')!, llng.url)
      if (next.origin !== llng.url) return answer
      answer = await browser.get(next.toString())
    }
    return answer
  }

  it('CAS: signs in at the portal, and the callback validates the ticket and links', async () => {
    const service = await campusgate({
      UNIVERSITY_PROTOCOL: 'cas',
      UNIVERSITY_CAS_URL: `${llng.url}/cas`,
      UNIVERSITY_ATTRIBUTES: 'subject=uid,email=mail,name=cn',
    })
    try {
      const { sessionKey, link } = await userAskingForTier2(
        { service, smtp },
        providers.env.MESSENGER_API_BASE_URL,
      )
      const browser = new Browser()
      const opened = await browser.get(link)
      assert.equal(opened.status, 301)
      const login = opened.headers.get('location')!
      assert.ok(login.startsWith(`${llng.url}/cas/login?`), login)
      const answer = await follow(browser, await signInAt(browser, login, 'dwho'))
      assert.equal(answer.status, 302)
      const callback = answer.headers.get('location')!
      assert.ok(callback.startsWith(`${base}/authorize/university/callback?state=`), callback)
      assert.match(callback, /[?&]ticket=ST-/)
      const done = await browser.get(callback, { accept: 'text/html' })
      assert.equal(done.status, 200)
      const page = await done.text()
      assert.match(page, /University account linked/)
      assert.match(page, /Doctor Who/)
      const session = await sessionOf(service, sessionKey)
      assert.equal(session.tier, 'university-registered')
      assert.equal(session.university?.subject, 'dwho')
      assert.equal(session.university?.email, 'dwho@badwolf.org')
    } finally {
      await service.close()
    }
  })

  it("SAML: signs in at the portal, and the IdP's post, posted again from campusgate, links", async () => {
    const service = await campusgate({
      UNIVERSITY_PROTOCOL: 'saml',
      UNIVERSITY_SAML_IDP_METADATA: `${llng.url}/saml/metadata`,
    })
    try {
      const { sessionKey, link } = await userAskingForTier2(
        { service, smtp },
        providers.env.MESSENGER_API_BASE_URL,
      )
      const browser = new Browser()
      const opened = await browser.get(link)
      assert.equal(opened.status, 301)
      const answer = await follow(
        browser,
        await signInAt(browser, opened.headers.get('location')!, 'dwho'),
      )
      const html = await answer.text()
      assert.equal(answer.status, 200, html.slice(0, 500))
      assert.equal(formAction(html), `${base}/authorize/university/callback`)
      // The portal's auto-post, cross-site: a browser sends no SameSite=Lax cookie with it.
      const crossSite = await fetch(`${base}/authorize/university/callback`, {
        method: 'POST',
        headers: { accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(hiddenFields(html)).toString(),
      })
      const repost = await crossSite.text()
      assert.equal(crossSite.status, 200)
      assert.equal(formAction(repost), '/authorize/university/callback')
      assert.equal((await sessionOf(service, sessionKey)).tier, 'messenger-registered')
      // The re-post from campusgate's own origin carries the cookie.
      const done = await browser.post(
        `${base}/authorize/university/callback`,
        hiddenFields(repost),
        { accept: 'text/html' },
      )
      assert.equal(done.status, 200)
      assert.match(await done.text(), /University account linked/)
      const session = await sessionOf(service, sessionKey)
      assert.equal(session.tier, 'university-registered')
      assert.equal(session.university?.email, 'dwho@badwolf.org')
      assert.equal(session.university?.name, 'Doctor Who')
    } finally {
      await service.close()
    }
  })
})
