import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { oidcSignInAndReturn, oidcUserInBrowser, startOidcStack } from '../helpers/oidc-stack.js'
import { logEvents } from '../helpers/logs.js'
import { call } from '../helpers/service.js'
import {
  attemptStatusesOf,
  decideAtProvider,
  followCallback,
  openLink,
  registerMessenger,
  requestConfirmationLink,
  sessionOf,
  startStack,
  type Stack,
} from '../helpers/stack.js'

const LINKED = /<h1>University account linked<\/h1>/
const TAKEN = /<h1>Already linked to another account<\/h1>/
const FAILED = /<h1>Linking failed<\/h1>/
const DAY = 86_400_000

/** A new messenger user's whole round trip at the UCL-API sandbox, signing in as `member`. */
async function roundTrip(stack: Stack, member: string, openId?: string) {
  const user = await registerMessenger(stack, openId)
  const link = await requestConfirmationLink(stack, user.sessionKey, 'student@example.edu')
  const opened = await openLink(link)
  const done = await followCallback(
    await decideAtProvider(stack, user.openId, 'allow', member),
    opened.cookie,
  )
  return { ...user, done }
}

describe('the identity a UCL-API round trip proves', () => {
  let stack: Stack
  before(async () => {
    stack = await startStack()
  })
  after(() => stack.close())

  it('records the user data on the user and shows it on GET /session, naming it on the page', async () => {
    const user = await roundTrip(stack, 'ada')
    assert.match(user.done.text, LINKED)
    assert.match(user.done.text, /Ada Lovelace \(ada\.lovelace\.24@sandbox-university\.example\)/)
    const session = await sessionOf(stack, user.sessionKey)
    assert.equal(session.body.tier, 'university-registered')
    assert.deepEqual(session.body.university, {
      subject: 'ALOVE01',
      email: 'ada.lovelace.24@sandbox-university.example',
      name: 'Ada Lovelace',
      isStudent: true,
      linkedAt: stack.service.clock.now().toISOString(),
    })
  })

  it('gives GET /session of a tier-1 key no university', async () => {
    const user = await registerMessenger(stack)
    const session = await sessionOf(stack, user.sessionKey)
    assert.equal(session.body.university, undefined)
  })

  it('keeps one member to one account: a second account stays tier 1, sees why, and it is logged', async () => {
    const holder = await roundTrip(stack, 'alan')
    assert.match(holder.done.text, LINKED)
    const second = await roundTrip(stack, 'alan')
    assert.equal(second.done.status, 200)
    assert.match(second.done.text, TAKEN)
    assert.match(second.done.text, /Alan Turing/)
    assert.equal((await sessionOf(stack, second.sessionKey)).body.tier, 'messenger-registered')
    assert.deepEqual(await attemptStatusesOf(stack, second.openId), ['taken'])
    const taken = logEvents(stack.service, 'university-identity-taken').at(-1)
    assert.equal(typeof taken?.holderUserId, 'string')
    assert.equal((await sessionOf(stack, holder.sessionKey)).body.tier, 'university-registered')

    // The holder logs out: the identity is free, and the second account can prove it.
    const logout = await call(`${stack.service.url}/logout`, {
      method: 'POST',
      headers: { authorization: holder.sessionKey },
    })
    assert.equal(logout.status, 200)
    const again = await roundTrip(stack, 'alan', second.openId)
    assert.match(again.done.text, LINKED)
    assert.equal((await sessionOf(stack, again.sessionKey)).body.university.subject, 'ATURI02')
  })

  it('frees the identity when its holder is erased', async () => {
    const holder = await roundTrip(stack, 'own', 'erased-holder')
    const member = (await sessionOf(stack, holder.sessionKey)).body.university
    const erase = await call(`${stack.service.url}/user`, {
      method: 'DELETE',
      headers: { authorization: holder.sessionKey },
    })
    assert.equal(erase.status, 200)
    // The "own" member follows the state: the same openId signs in as the same student.
    const next = await roundTrip(stack, 'own', 'erased-holder')
    assert.match(next.done.text, LINKED)
    assert.equal((await sessionOf(stack, next.sessionKey)).body.university.subject, member.subject)
  })
})

describe('UNIVERSITY_IDENTITY_BINDING=shared', () => {
  let stack: Stack
  before(async () => {
    stack = await startStack({ UNIVERSITY_IDENTITY_BINDING: 'shared' })
  })
  after(() => stack.close())

  it('lets several accounts prove the same member', async () => {
    const first = await roundTrip(stack, 'ada')
    const second = await roundTrip(stack, 'ada')
    assert.match(first.done.text, LINKED)
    assert.match(second.done.text, LINKED)
    for (const user of [first, second]) {
      const session = await sessionOf(stack, user.sessionKey)
      assert.equal(session.body.tier, 'university-registered')
      assert.equal(session.body.university.subject, 'ALOVE01')
    }
  })
})

describe('UNIVERSITY_LINK_MAX_AGE=30d', () => {
  let stack: Stack
  before(async () => {
    stack = await startStack({ UNIVERSITY_LINK_MAX_AGE: '30d' })
  })
  after(() => stack.close())

  it('lapses a link to tier 1 after 30 days, and the member can prove membership anew', async () => {
    const user = await roundTrip(stack, 'ada')
    stack.service.clock.advance(30 * DAY - 1000)
    assert.equal((await sessionOf(stack, user.sessionKey)).body.tier, 'university-registered')
    stack.service.clock.advance(2000)
    const lapsed = await sessionOf(stack, user.sessionKey)
    assert.equal(lapsed.body.tier, 'messenger-registered')
    assert.equal(lapsed.body.university, undefined)

    // A lapsed link holds the identity no more: another account may prove it, then this one again.
    const other = await roundTrip(stack, 'ada')
    assert.match(other.done.text, LINKED)
    const back = await roundTrip(stack, 'alan', user.openId)
    assert.match(back.done.text, LINKED)
    assert.equal((await sessionOf(stack, back.sessionKey)).body.tier, 'university-registered')
  })
})

describe('the UCL-API user-data endpoint', () => {
  it('links nothing when the user data cannot be had', async () => {
    const stack = await startStack()
    try {
      const broken = await startStack({
        UNIVERSITY_USERINFO_URL: `${stack.providersUrl}/_sandbox/university/no-such-endpoint`,
      })
      try {
        const user = await roundTrip(broken, 'ada')
        assert.match(user.done.text, FAILED)
        assert.equal((await sessionOf(broken, user.sessionKey)).body.tier, 'messenger-registered')
      } finally {
        await broken.close()
      }
    } finally {
      await stack.close()
    }
  })
})

describe('one member, one account, through OpenID Connect', () => {
  it('refuses a second account the member already linked, until the holder logs out', async () => {
    const stack = await startOidcStack()
    try {
      const holder = await oidcUserInBrowser(stack)
      assert.match((await oidcSignInAndReturn(stack, holder, { member: 'bob' })).done.text, LINKED)
      const second = await oidcUserInBrowser(stack)
      const { done } = await oidcSignInAndReturn(stack, second, { member: 'bob' })
      assert.match(done.text, TAKEN)
      assert.equal((await sessionOf(stack, second.sessionKey)).body.tier, 'messenger-registered')
      await call(`${stack.service.url}/logout`, {
        method: 'POST',
        headers: { authorization: holder.sessionKey },
      })
      const retry = await oidcUserInBrowser(stack)
      assert.match((await oidcSignInAndReturn(stack, retry, { member: 'bob' })).done.text, LINKED)
    } finally {
      await stack.close()
    }
  })
})
