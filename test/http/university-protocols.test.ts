import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { TestClock } from '../helpers/clock.js'
import { formAction, hiddenFields } from '../helpers/lemonldap.js'
import { call, startService, type RunningService } from '../helpers/service.js'
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'
import { followCallback, openLink, userAskingForTier2 } from '../helpers/stack.js'

// docs/university-providers.md, "CAS" and "SAML": the whole tier 2 round trip through campusgate
// (the emailed link, the attempt cookie, the callback, the session's tier) with the sandbox's CAS
// server and SAML IdP, as `npm start` serves them when no server is named.

const HTML = 'text/html,*/*;q=0.8'

async function started(env: Record<string, string>) {
  const smtp = await startSmtpSink()
  // node-saml checks an assertion's times against the system clock, the sandbox IdP signs them
  // with the service's: the two agree.
  const service = await startService(
    { ...env, SMTP_URL: smtp.url },
    { clock: new TestClock(Date.now()) },
  )
  return { smtp, service }
}

async function tierOf(service: RunningService, sessionKey: string) {
  const session = await call(`${service.url}/session`, { headers: { authorization: sessionKey } })
  assert.equal(session.status, 200)
  return session.body as { tier: string; university?: Record<string, unknown> }
}

describe('tier 2 through CAS, with the sandbox CAS server', () => {
  let service: RunningService
  let smtp: SmtpSink
  before(async () => {
    ;({ service, smtp } = await started({ UNIVERSITY_PROTOCOL: 'cas' }))
  })
  after(async () => {
    await service.close()
    await smtp.stop()
  })

  /** The member picks Allow or Deny at the CAS login page: where the server sends the browser. */
  async function decide(
    location: string,
    decision: 'allow' | 'deny',
    member = 'ada',
  ): Promise<string> {
    const login = new URL(location)
    assert.equal(`${login.origin}${login.pathname}`, `${service.url}/_sandbox/cas/login`)
    const answer = await fetch(`${service.url}/_sandbox/cas/login/decision`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        service: login.searchParams.get('service')!,
        member,
        decision,
      }).toString(),
    })
    assert.equal(answer.status, 302)
    return answer.headers.get('location')!
  }

  it('links the member on the ticket, once, and only for the browser that opened the link', async () => {
    const { sessionKey, link } = await userAskingForTier2({ service, smtp })
    const opened = await openLink(link)
    assert.equal(opened.status, 301)
    const callback = await decide(opened.location, 'allow')
    assert.ok(new URL(callback).searchParams.get('ticket')?.startsWith('ST-'))
    // Another browser (no cookie) with the same callback links nothing.
    const stranger = await followCallback(callback, null)
    assert.equal(stranger.status, 200)
    assert.doesNotMatch(stranger.text, /linked/)
    assert.equal((await tierOf(service, sessionKey)).tier, 'messenger-registered')

    const done = await followCallback(callback, opened.cookie)
    assert.equal(done.status, 200)
    assert.match(done.text, /University account linked/)
    const session = await tierOf(service, sessionKey)
    assert.equal(session.tier, 'university-registered')
    assert.equal(session.university?.subject, 'ALOVE01')
    assert.equal(session.university?.isStudent, true)

    // The same ticket again: the attempt is spent, nothing changes, still 200.
    const again = await followCallback(callback, opened.cookie, 'application/json')
    assert.equal(again.status, 200)
    assert.equal(again.text, '{}')
  })

  it('links one university member to one person: a second user signing in as them gets nothing', async () => {
    const first = await userAskingForTier2({ service, smtp })
    const second = await userAskingForTier2({ service, smtp })
    for (const [user, heading] of [
      [first, /University account linked/],
      [second, /Already linked to another account/],
    ] as const) {
      const opened = await openLink(user.link)
      const done = await followCallback(
        await decide(opened.location, 'allow', 'alan'),
        opened.cookie,
      )
      assert.match(done.text, heading)
    }
    assert.equal((await tierOf(service, second.sessionKey)).tier, 'messenger-registered')
    const audit = await service.db.kysely
      .selectFrom('audit_events')
      .select('type')
      .where('type', 'like', 'university-%')
      .execute()
    assert.ok(audit.some((row) => row.type === 'university-linked'))
  })

  it('links nothing when the member comes back without a ticket', async () => {
    const { sessionKey, link } = await userAskingForTier2({ service, smtp })
    const opened = await openLink(link)
    const callback = await decide(opened.location, 'deny')
    const done = await followCallback(callback, opened.cookie)
    assert.equal(done.status, 200)
    assert.match(done.text, /Authorization declined/)
    assert.equal((await tierOf(service, sessionKey)).tier, 'messenger-registered')
  })
})

describe('tier 2 through SAML, with the sandbox IdP', () => {
  let service: RunningService
  let smtp: SmtpSink
  before(async () => {
    ;({ service, smtp } = await started({ UNIVERSITY_PROTOCOL: 'saml' }))
  })
  after(async () => {
    await service.close()
    await smtp.stop()
  })

  /** The member picks Allow or Deny at the IdP: the fields its page posts to the callback. */
  async function decide(
    location: string,
    decision: 'allow' | 'deny',
  ): Promise<Record<string, string>> {
    const page = await fetch(location)
    const html = await page.text()
    assert.equal(page.status, 200, html)
    const answer = await fetch(`${service.url}/_sandbox/saml/sso/decision`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...hiddenFields(html), member: 'ada', decision }).toString(),
    })
    const post = await answer.text()
    assert.equal(answer.status, 200, post)
    assert.equal(formAction(post), `${service.url}/authorize/university/callback`)
    return hiddenFields(post)
  }

  /** A browser posting `fields` to the callback, with or without the attempt cookie. */
  async function post(
    fields: Record<string, string>,
    cookie: string | null,
    accept = HTML,
  ): Promise<{ status: number; text: string; headers: Headers }> {
    const headers: Record<string, string> = {
      accept,
      'content-type': 'application/x-www-form-urlencoded',
    }
    if (cookie !== null) headers.cookie = cookie
    const answer = await fetch(`${service.url}/authorize/university/callback`, {
      method: 'POST',
      headers,
      body: new URLSearchParams(fields).toString(),
      redirect: 'manual',
    })
    return { status: answer.status, text: await answer.text(), headers: answer.headers }
  }

  it('serves the service provider metadata naming the callback as its assertion consumer', async () => {
    const answer = await fetch(`${service.url}/authorize/university/saml`)
    assert.equal(answer.status, 200)
    assert.match(answer.headers.get('content-type')!, /^application\/samlmetadata\+xml/)
    const xml = await answer.text()
    assert.match(xml, new RegExp(`entityID="${service.url}/authorize/university/saml"`))
    assert.match(
      xml,
      new RegExp(
        `Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"[^>]*Location="${service.url}/authorize/university/callback"`,
      ),
    )
  })

  it("re-posts the IdP's cross-site post from its own origin, and links on the post that brings the cookie", async () => {
    const { sessionKey, link } = await userAskingForTier2({ service, smtp })
    const opened = await openLink(link)
    assert.equal(opened.status, 301)
    const fields = await decide(opened.location, 'allow')

    // The IdP's post arrives without the SameSite=Lax cookie: a page that posts the same fields
    // again, from campusgate's origin, by its own script or its button.
    const first = await post(fields, null)
    assert.equal(first.status, 200)
    assert.match(first.headers.get('content-security-policy')!, /script-src 'self'/)
    assert.doesNotMatch(first.text, /<script>/)
    assert.match(first.text, /src="\/authorize\/university\/repost\.js"/)
    assert.equal(formAction(first.text), '/authorize/university/callback')
    const again = hiddenFields(first.text)
    assert.deepEqual(Object.keys(again).sort(), [
      'RelayState',
      'SAMLResponse',
      'campusgate_reposted',
    ])
    assert.equal(again.SAMLResponse, fields.SAMLResponse)
    assert.equal((await tierOf(service, sessionKey)).tier, 'messenger-registered')
    const script = await fetch(`${service.url}/authorize/university/repost.js`)
    assert.match(await script.text(), /getElementById\('repost'\)\.submit\(\)/)

    // The re-post without the cookie (another browser) is refused, not re-posted again.
    const stranger = await post(again, null)
    assert.equal(stranger.status, 200)
    assert.doesNotMatch(stranger.text, /repost/)
    assert.doesNotMatch(stranger.text, /linked/)

    const done = await post(again, opened.cookie)
    assert.equal(done.status, 200)
    assert.match(done.text, /University account linked/)
    const session = await tierOf(service, sessionKey)
    assert.equal(session.tier, 'university-registered')
    assert.equal(session.university?.email, 'ada.lovelace.24@sandbox-university.example')

    // Replayed: the attempt is spent and the assertion's id was seen; nothing changes.
    const replay = await post(again, opened.cookie, 'application/json')
    assert.equal(replay.status, 200)
    assert.equal(replay.text, '{}')
  })

  it('links nothing on a denial', async () => {
    const { sessionKey, link } = await userAskingForTier2({ service, smtp })
    const opened = await openLink(link)
    const fields = await decide(opened.location, 'deny')
    const done = await post({ ...fields, campusgate_reposted: '1' }, opened.cookie)
    assert.equal(done.status, 200)
    assert.match(done.text, /Authorization declined/)
    assert.equal((await tierOf(service, sessionKey)).tier, 'messenger-registered')
  })

  it('answers 200 to a post that is no SAML Response at all', async () => {
    const junk = await post(
      { SAMLResponse: 'not base64 xml', RelayState: 'x' },
      'campusgate-attempt=abc',
      'application/json',
    )
    assert.equal(junk.status, 200)
    assert.equal(junk.text, '{}')
    const json = await fetch(`${service.url}/authorize/university/callback`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"SAMLResponse":"x"}',
    })
    assert.equal(json.status, 200)
  })
})
