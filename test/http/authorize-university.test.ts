import assert from 'node:assert/strict'
import { request as httpRequest } from 'node:http'
import { after, before, describe, it } from 'node:test'
import { hashSecret } from '../../src/lib/secrets.js'
import { call, MEDIA_TYPE } from '../helpers/service.js'
import {
  attemptStatusesOf,
  CLIENT_ID,
  decideAtProvider,
  followCallback,
  openLink,
  parseSetCookie,
  registerMessenger,
  requestConfirmationLink,
  sessionOf,
  startStack,
  type Stack,
} from '../helpers/stack.js'

const MINUTE = 60_000

async function assertInvalidCode(link: string): Promise<void> {
  const response = await call(link)
  assert.equal(response.status, 401, response.text)
  assert.equal(response.headers.get('content-type'), MEDIA_TYPE)
  assert.deepEqual(response.body, { error: '@unauthorized/invalid-university-registration-code' })
  assert.equal(response.headers.get('cache-control'), 'no-cache, no-store, must-revalidate')
  assert.equal(response.headers.get('location'), null)
  assert.equal(response.headers.get('set-cookie'), null)
}

/** A user with a fresh confirmation link. */
async function linkFor(
  stack: Stack,
): Promise<{ link: string; openId: string; sessionKey: string }> {
  const user = await registerMessenger(stack)
  const link = await requestConfirmationLink(stack, user.sessionKey, 'student@example.edu')
  return { ...user, link }
}

/** GET with headers fetch will not let us set (Host). */
function rawGet(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; location: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers }, (res) => {
      res.resume()
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, location: res.headers.location ?? '' }),
      )
    })
    req.on('error', reject)
    req.end()
  })
}

describe('GET /authorize/university', () => {
  let stack: Stack
  before(async () => {
    stack = await startStack()
  })
  after(() => stack.close())

  const expectedLocation = (openId: string) =>
    `${stack.providersUrl}/_sandbox/university/authorise?client_id=${CLIENT_ID}&state=${openId}`

  it('redirects a valid code with 301 to the provider, no-cache headers and an attempt cookie', async () => {
    const { link, openId } = await linkFor(stack)
    const opened = await openLink(link)
    assert.equal(opened.status, 301)
    assert.equal(opened.location, expectedLocation(openId))
    assert.equal(opened.headers.get('cache-control'), 'no-cache, no-store, must-revalidate')
    assert.equal(opened.headers.get('pragma'), 'no-cache')
    assert.equal(opened.headers.get('expires'), '0')
    assert.equal(opened.headers.get('referrer-policy'), 'no-referrer')

    const cookies = opened.headers.getSetCookie()
    assert.equal(cookies.length, 1)
    const cookie = parseSetCookie(cookies[0])
    assert.equal(cookie.name, 'campusgate-attempt')
    assert.match(cookie.value, /^[A-Za-z0-9_-]{43}$/)
    assert.deepEqual(cookie.attributes, {
      'max-age': '600',
      path: '/authorize/university',
      httponly: true,
      samesite: 'Lax',
    })

    const attempts = await stack.service.db.kysely
      .selectFrom('university_attempts')
      .selectAll()
      .execute()
    assert.ok(!JSON.stringify(attempts).includes(cookie.value), 'the cookie is not stored in clear')
    assert.equal(attempts.filter((a) => a.cookie_hash === hashSecret(cookie.value)).length, 1)
  })

  for (const [what, query] of [
    ['absent', ''],
    ['empty', '?universityRegistrationCode='],
  ] as const) {
    it(`answers 400 missing-required-query-parameters when the code is ${what}`, async () => {
      const response = await call(`${stack.service.url}/authorize/university${query}`)
      assert.equal(response.status, 400, response.text)
      assert.equal(response.headers.get('content-type'), MEDIA_TYPE)
      assert.deepEqual(response.body, { error: '@bad-request/missing-required-query-parameters' })
    })
  }

  it('answers 401 invalid-university-registration-code for a code never issued', async () => {
    const base = `${stack.service.url}/authorize/university?universityRegistrationCode=`
    await assertInvalidCode(`${base}${'A'.repeat(43)}`)
    await assertInvalidCode(`${base}${'A'.repeat(1000)}`)
  })

  it('keeps a code valid for 30 minutes and answers 401 once it is older', async () => {
    const { link } = await linkFor(stack)
    stack.service.clock.advance(30 * MINUTE - 1000)
    assert.equal((await openLink(link)).status, 301)
    stack.service.clock.advance(2000)
    await assertInvalidCode(link)
  })

  it('answers 401 for a code superseded by a newer request, while the newer one works', async () => {
    const { link: older, sessionKey, openId } = await linkFor(stack)
    const newer = await requestConfirmationLink(stack, sessionKey, 'student@example.edu')
    await assertInvalidCode(older)
    const opened = await openLink(newer)
    assert.equal(opened.status, 301)
    assert.equal(opened.location, expectedLocation(openId))
  })

  it('starts a separate attempt on every open, so a mail scanner does not spoil the user', async () => {
    const { link, openId, sessionKey } = await linkFor(stack)
    const scanner = await openLink(link)
    const browser = await openLink(link)
    assert.equal(scanner.status, 301)
    assert.equal(browser.status, 301)
    assert.equal(browser.location, scanner.location)
    assert.notEqual(browser.cookie, scanner.cookie)
    assert.deepEqual(await attemptStatusesOf(stack, openId), ['redirected', 'redirected'])

    const callback = await decideAtProvider(stack, openId, 'allow')
    const done = await followCallback(callback, browser.cookie)
    assert.match(done.text, /University account linked/)
    assert.equal((await sessionOf(stack, sessionKey)).body.tier, 'university-registered')
    assert.deepEqual((await attemptStatusesOf(stack, openId)).sort(), ['completed', 'ended'])
  })

  it('answers 401 for the link after the user logged out', async () => {
    const { link, sessionKey } = await linkFor(stack)
    const logout = await call(`${stack.service.url}/logout`, {
      method: 'POST',
      headers: { authorization: sessionKey },
    })
    assert.equal(logout.status, 200)
    await assertInvalidCode(link)
  })

  it('sends the browser to the same Location whatever Host, X-Forwarded-Host or extra parameters say', async () => {
    const { link, openId } = await linkFor(stack)
    const expected = expectedLocation(openId)
    const forged = await rawGet(link, { host: 'evil.example', 'x-forwarded-host': 'evil.example' })
    assert.equal(forged.status, 301)
    assert.equal(forged.location, expected)
    const extra = `${link}&client_id=evil&state=someone-else&redirect_uri=https://evil.example/`
    const opened = await openLink(extra)
    assert.equal(opened.status, 301)
    assert.equal(opened.location, expected)
  })
})

describe('GET /authorize/university with REGISTRATION_CODE_TTL=5m', () => {
  let stack: Stack
  before(async () => {
    stack = await startStack({ REGISTRATION_CODE_TTL: '5m' })
  })
  after(() => stack.close())

  it('never lets the attempt cookie outlive the code', async () => {
    const { link } = await linkFor(stack)
    assert.match(stack.smtp.messages.at(-1)?.text ?? '', /The link is valid for 5 minutes\./)
    const first = parseSetCookie((await openLink(link)).headers.getSetCookie()[0])
    assert.ok(Number(first.attributes['max-age']) <= 300, String(first.attributes['max-age']))
    stack.service.clock.advance(4 * MINUTE)
    const later = parseSetCookie((await openLink(link)).headers.getSetCookie()[0])
    assert.ok(Number(later.attributes['max-age']) <= 60, String(later.attributes['max-age']))
    stack.service.clock.advance(MINUTE + 1)
    await assertInvalidCode(link)
  })
})

describe('GET /authorize/university with PUBLIC_BASE_URL on https', () => {
  let stack: Stack
  before(async () => {
    stack = await startStack({ PUBLIC_BASE_URL: 'https://campusgate.example' })
  })
  after(() => stack.close())

  it('names the cookie __Host-campusgate-attempt with Secure and Path=/, and the round trip links', async () => {
    const { link, openId, sessionKey } = await linkFor(stack)
    const mailed = new URL(link)
    assert.equal(mailed.origin, 'https://campusgate.example')
    const opened = await openLink(`${stack.service.url}${mailed.pathname}${mailed.search}`)
    assert.equal(opened.status, 301)
    const cookie = parseSetCookie(opened.headers.getSetCookie()[0])
    assert.equal(cookie.name, '__Host-campusgate-attempt')
    assert.deepEqual(cookie.attributes, {
      'max-age': '600',
      path: '/',
      httponly: true,
      secure: true,
      samesite: 'Lax',
    })

    const callback = await decideAtProvider(stack, openId, 'allow')
    const done = await followCallback(callback, opened.cookie)
    assert.match(done.text, /University account linked/)
    assert.equal((await sessionOf(stack, sessionKey)).body.tier, 'university-registered')
  })
})
