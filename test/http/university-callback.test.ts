import assert from 'node:assert/strict'
import { cipherFor } from '../../src/secrets-at-rest.js'
import { after, before, describe, it } from 'node:test'
import { logEvents } from '../helpers/logs.js'
import { MEDIA_TYPE } from '../helpers/service.js'
import { linkIn } from '../helpers/smtp-sink.js'
import {
  attemptStatusesOf,
  CLIENT_ID,
  CLIENT_SECRET,
  codeOf,
  decideAtProvider,
  followCallback,
  openLink,
  registerMessenger,
  requestConfirmationLink,
  sessionOf,
  spendProviderCode,
  startStack,
  userRowOf,
  withParams,
  type Stack,
} from '../helpers/stack.js'

const LINKED = /<h1>University account linked<\/h1>/
const DECLINED = /<h1>Authorization declined<\/h1>[\s\S]*declined/
const FAILED = /<h1>Linking failed<\/h1>/
const NEUTRAL = /<h1>Return to the app<\/h1>/

/** A user who asked for the email and opened its link in a browser. */
async function userInBrowser(stack: Stack) {
  const user = await registerMessenger(stack)
  const link = await requestConfirmationLink(stack, user.sessionKey, 'student@example.edu')
  const opened = await openLink(link)
  assert.equal(opened.status, 301)
  return { ...user, link, cookie: opened.cookie }
}

/** The user decides at the provider and the browser (with `cookie`) follows it back. */
async function decideAndReturn(
  stack: Stack,
  openId: string,
  decision: 'allow' | 'deny',
  cookie: string | null,
) {
  return followCallback(await decideAtProvider(stack, openId, decision), cookie)
}

async function tierOf(stack: Stack, sessionKey: string): Promise<string> {
  return (await sessionOf(stack, sessionKey)).body.tier as string
}

function assertNeutral(done: { status: number; text: string; headers: Headers }): void {
  assert.equal(done.status, 200)
  assert.equal(done.headers.get('content-type'), 'text/html; charset=utf-8')
  assert.match(done.text, NEUTRAL)
  assert.doesNotMatch(done.text, /linked|declined|failed/i)
}

describe('GET /authorize/university/callback', () => {
  let stack: Stack
  before(async () => {
    stack = await startStack()
  })
  after(() => stack.close())

  it('links the account when the browser holding the attempt cookie comes back with Allow', async () => {
    const user = await userInBrowser(stack)
    const done = await decideAndReturn(stack, user.openId, 'allow', user.cookie)
    assert.equal(done.status, 200)
    assert.equal(done.headers.get('content-type'), 'text/html; charset=utf-8')
    assert.equal(done.headers.get('cache-control'), 'no-store')
    assert.match(done.headers.get('content-security-policy') ?? '', /default-src 'none'/)
    assert.equal(done.headers.get('x-content-type-options'), 'nosniff')
    assert.match(done.text, LINKED)
    assert.match(done.headers.getSetCookie()[0] ?? '', /^campusgate-attempt=;.*Max-Age=0/)
    assert.equal(await tierOf(stack, user.sessionKey), 'university-registered')

    const row = await userRowOf(stack, user.openId)
    assert.match(
      cipherFor(stack.service.config).cipher.decrypt(row.university_token ?? ''),
      /^uclapi-sandbox-/,
      'the token is kept encrypted, usable by the service (issue 15)',
    )
    assert.equal(row.university_linked_at, stack.service.clock.now().getTime())
    const users = await stack.service.db.kysely.selectFrom('users').selectAll().execute()
    assert.ok(!JSON.stringify(users).includes('uclapi-sandbox-'), 'no token in clear')
    assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['completed'])
  })

  it('ends the pending codes once linked: the emailed link answers 401', async () => {
    const user = await userInBrowser(stack)
    await decideAndReturn(stack, user.openId, 'allow', user.cookie)
    const { id } = await userRowOf(stack, user.openId)
    const codes = await stack.service.db.kysely
      .selectFrom('registration_codes')
      .select('id')
      .where('user_id', '=', id)
      .execute()
    assert.deepEqual(codes, [])
    assert.equal((await openLink(user.link)).status, 401)
  })

  it('shows "declined" on Deny, leaves the tier and lets the user try again', async () => {
    const user = await userInBrowser(stack)
    const done = await decideAndReturn(stack, user.openId, 'deny', user.cookie)
    assert.equal(done.status, 200)
    assert.match(done.text, DECLINED)
    assert.equal(await tierOf(stack, user.sessionKey), 'messenger-registered')
    assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['denied'])

    const again = await openLink(user.link)
    const linked = await decideAndReturn(stack, user.openId, 'allow', again.cookie)
    assert.match(linked.text, LINKED)
  })

  it('changes nothing for a callback without the attempt cookie, and the real browser still links', async () => {
    const user = await userInBrowser(stack)
    const callback = await decideAtProvider(stack, user.openId, 'allow')
    const stranger = await followCallback(callback, null)
    assertNeutral(stranger)
    assert.deepEqual(stranger.headers.getSetCookie(), [])
    assert.equal(await tierOf(stack, user.sessionKey), 'messenger-registered')
    assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['redirected'])

    assert.match((await followCallback(callback, user.cookie)).text, LINKED)
  })

  it('changes nothing for an openId with no attempt, and logs university-callback-refused', async () => {
    const user = await registerMessenger(stack)
    const forged =
      `${stack.service.url}/authorize/university/callback?result=allowed&code=forged` +
      `&client_id=${CLIENT_ID}&state=${user.openId}&client_secret=${CLIENT_SECRET}`
    assertNeutral(await followCallback(forged, `campusgate-attempt=${'A'.repeat(43)}`))
    assert.equal(await tierOf(stack, user.sessionKey), 'messenger-registered')
    assert.deepEqual(await attemptStatusesOf(stack, user.openId), [])
    const refused = logEvents(stack.service, 'university-callback-refused').filter(
      (e) => e.state === user.openId,
    )
    assert.equal(refused.length, 1)
    assert.equal(refused[0].reason, 'no attempt in progress for this browser')
  })

  for (const [param, value, reason] of [
    ['client_secret', 'guess', 'client_secret does not match'],
    ['client_id', 'someone-else', 'client_id does not match'],
  ] as const) {
    it(`changes nothing for a wrong ${param}, and the genuine callback still links`, async () => {
      const user = await userInBrowser(stack)
      const callback = await decideAtProvider(stack, user.openId, 'allow')
      assertNeutral(await followCallback(withParams(callback, { [param]: value }), user.cookie))
      assert.equal(await tierOf(stack, user.sessionKey), 'messenger-registered')
      assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['redirected'])
      const refused = logEvents(stack.service, 'university-callback-refused').at(-1)
      assert.equal(refused?.reason, reason)
      assert.equal(refused?.state, user.openId)

      assert.match((await followCallback(callback, user.cookie)).text, LINKED)
    })
  }

  it("refuses a callback naming another user's openId, even with an attempt cookie of its own", async () => {
    const mallory = await userInBrowser(stack)
    const victim = await userInBrowser(stack)
    // Mallory allows at the provider with the victim's openId as state, then calls back.
    const forged = await decideAndReturn(stack, victim.openId, 'allow', mallory.cookie)
    assertNeutral(forged)
    assert.equal(await tierOf(stack, victim.sessionKey), 'messenger-registered')
    assert.equal(await tierOf(stack, mallory.sessionKey), 'messenger-registered')
    assert.deepEqual(await attemptStatusesOf(stack, victim.openId), ['redirected'])
    assert.deepEqual(await attemptStatusesOf(stack, mallory.openId), ['redirected'])
  })

  it('changes nothing once the attempt has expired', async () => {
    const user = await userInBrowser(stack)
    const callback = await decideAtProvider(stack, user.openId, 'allow')
    stack.service.clock.advance(10 * 60_000)
    assertNeutral(await followCallback(callback, user.cookie))
    assert.equal(await tierOf(stack, user.sessionKey), 'messenger-registered')
  })

  it('links once when the same callback is delivered twice', async () => {
    const user = await userInBrowser(stack)
    const linkedBefore = logEvents(stack.service, 'university-linked').length
    const callback = await decideAtProvider(stack, user.openId, 'allow')
    assert.match((await followCallback(callback, user.cookie)).text, LINKED)
    assertNeutral(await followCallback(callback, user.cookie))
    assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['completed'])
    assert.equal(logEvents(stack.service, 'university-linked').length, linkedBefore + 1)
  })

  it('links once when the same callback arrives twice at the same moment', async () => {
    const user = await userInBrowser(stack)
    const callback = await decideAtProvider(stack, user.openId, 'allow')
    const pages = await Promise.all([
      followCallback(callback, user.cookie),
      followCallback(callback, user.cookie),
    ])
    assert.deepEqual(pages.map((page) => LINKED.test(page.text)).sort(), [false, true])
    assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['completed'])
    assert.equal(await tierOf(stack, user.sessionKey), 'university-registered')
  })

  it('answers a non-browser with {} in the versioned media type, linked or not', async () => {
    const user = await userInBrowser(stack)
    const callback = await decideAtProvider(stack, user.openId, 'allow')
    for (const cookie of [null, user.cookie]) {
      const done = await followCallback(callback, cookie, MEDIA_TYPE)
      assert.equal(done.status, 200)
      assert.equal(done.headers.get('content-type'), MEDIA_TYPE)
      assert.deepEqual(JSON.parse(done.text), {})
    }
    assert.equal(await tierOf(stack, user.sessionKey), 'university-registered')
  })

  it('shows "Linking failed" when the token exchange fails, and a new open of the link can still link', async () => {
    const user = await userInBrowser(stack)
    const callback = await decideAtProvider(stack, user.openId, 'allow')
    // Someone else spends the provider's code first.
    await spendProviderCode(stack, callback)

    const done = await followCallback(callback, user.cookie)
    assert.equal(done.status, 200)
    assert.match(done.text, FAILED)
    assert.equal(await tierOf(stack, user.sessionKey), 'messenger-registered')
    assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['failed'])
    const failed = logEvents(stack.service, 'university-link-failed').at(-1)
    assert.match(String(failed?.reason), /code has already been used/)

    const fresh = await openLink(user.link)
    assertNeutral(await followCallback(callback, fresh.cookie.replace(/=.*/, '=stale')))
    assert.match((await followCallback(callback, fresh.cookie)).text, FAILED)
    const retry = await openLink(user.link)
    const linked = await decideAndReturn(stack, user.openId, 'allow', retry.cookie)
    assert.match(linked.text, LINKED)
  })

  it('never writes client_secret, provider codes, session keys, codes or cookies to the log', async () => {
    const user = await userInBrowser(stack)
    const denied = await decideAtProvider(stack, user.openId, 'deny')
    await followCallback(withParams(denied, { client_secret: 'wrong-secret-in-log?' }), user.cookie)
    const callback = await decideAtProvider(stack, user.openId, 'allow')
    await followCallback(callback, user.cookie)
    await followCallback(callback, user.cookie)

    const logs = stack.service.logs()
    assert.match(logs, /university-linked/)
    for (const secret of [
      CLIENT_SECRET,
      'wrong-secret-in-log?',
      new URL(callback).searchParams.get('code')!,
      user.sessionKey,
      codeOf(user.link),
      user.cookie.split('=')[1],
      'uclapi-sandbox-',
      // Every registration code mailed during this file's tests.
      ...stack.smtp.messages.map((mail) => codeOf(linkIn(mail))),
    ]) {
      assert.ok(!logs.includes(secret), `the log contains ${secret}`)
    }
  })
})

describe('GET /authorize/university/callback with UNIVERSITY_CALLBACK_BINDING=none', () => {
  for (const [allowed, links] of [
    ['127.0.0.1', true],
    ['10.9.9.9', false],
  ] as const) {
    describe(`and UNIVERSITY_CALLBACK_ALLOWED_IPS=${allowed}`, () => {
      let stack: Stack
      before(async () => {
        stack = await startStack({
          UNIVERSITY_CALLBACK_BINDING: 'none',
          UNIVERSITY_CALLBACK_ALLOWED_IPS: allowed,
        })
      })
      after(() => stack.close())

      it(
        links
          ? 'links on a callback without cookie from an allowed address'
          : 'links nothing on a callback from an address not allowed',
        async () => {
          const user = await userInBrowser(stack)
          const done = await decideAndReturn(stack, user.openId, 'allow', null)
          assertNeutral(done)
          const tier = links ? 'university-registered' : 'messenger-registered'
          assert.equal(await tierOf(stack, user.sessionKey), tier)
          assert.deepEqual(await attemptStatusesOf(stack, user.openId), [
            links ? 'completed' : 'redirected',
          ])
          if (!links) {
            const refused = logEvents(stack.service, 'university-callback-refused')
            assert.deepEqual(
              refused.map((e) => e.reason as string),
              ['caller not in UNIVERSITY_CALLBACK_ALLOWED_IPS'],
            )
          }
        },
      )

      if (links) {
        it('links nothing on a callback without client_secret, even with a real code', async () => {
          const user = await userInBrowser(stack)
          const callback = await decideAtProvider(stack, user.openId, 'allow')
          const forged = withParams(callback, { client_secret: null })
          assertNeutral(await followCallback(forged, null))
          assert.equal(await tierOf(stack, user.sessionKey), 'messenger-registered')
          assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['redirected'])
          assert.ok(
            logEvents(stack.service, 'university-callback-refused').some(
              (e) => e.reason === 'client_secret required with UNIVERSITY_CALLBACK_BINDING=none',
            ),
          )
        })

        it('takes a denial without client_secret', async () => {
          const user = await userInBrowser(stack)
          const callback = await decideAtProvider(stack, user.openId, 'deny')
          assertNeutral(await followCallback(withParams(callback, { client_secret: null }), null))
          assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['denied'])
        })
      }
    })
  }
})
