import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser } from 'playwright-core'
import { launchChromium } from '../helpers/chromium.js'
import { startOidcStack, type OidcStack } from '../helpers/oidc-stack.js'
import {
  registerMessenger,
  requestConfirmationLink,
  sessionOf,
  startStack,
  type Stack,
} from '../helpers/stack.js'

/**
 * The tier 2 round trip in a real browser: the emailed link, the provider's Allow / Deny page and
 * the callback, with the attempt cookie handled by Chromium itself.
 */
const launch = launchChromium

describe('the tier 2 round trip in Chromium', () => {
  let stack: Stack
  let browser: Browser
  before(async () => {
    stack = await startStack()
    browser = await launch()
  })
  after(async () => {
    await browser?.close()
    await stack?.close()
  })

  it('links the account when the user presses Allow', async () => {
    const user = await registerMessenger(stack)
    const link = await requestConfirmationLink(stack, user.sessionKey, 'browser@example.edu')
    const page = await browser.newPage()
    await page.goto(link)
    assert.match(await page.title(), /sandbox/i)
    await page.getByRole('button', { name: 'Allow' }).click()
    await page.waitForURL(/\/authorize\/university\/callback/)
    assert.equal(await page.locator('h1').textContent(), 'University account linked')
    await page.close()
    assert.equal((await sessionOf(stack, user.sessionKey)).body.tier, 'university-registered')
  })

  it('links nothing when the user presses Deny, and says so', async () => {
    const user = await registerMessenger(stack)
    const link = await requestConfirmationLink(stack, user.sessionKey, 'denier@example.edu')
    const page = await browser.newPage()
    await page.goto(link)
    await page.getByRole('button', { name: 'Deny' }).click()
    await page.waitForURL(/\/authorize\/university\/callback/)
    assert.equal(await page.locator('h1').textContent(), 'Authorization declined')
    await page.close()
    assert.equal((await sessionOf(stack, user.sessionKey)).body.tier, 'messenger-registered')
  })

  it('tells another browser nothing, and links nothing there', async () => {
    const user = await registerMessenger(stack)
    const link = await requestConfirmationLink(stack, user.sessionKey, 'victim@example.edu')
    // The user's browser opens the link and stops at the provider's page.
    const victim = await browser.newContext()
    const victimPage = await victim.newPage()
    await victimPage.goto(link)
    // Another browser, without the attempt cookie, walks the provider's Allow for the same openId.
    const other = await browser.newContext()
    const otherPage = await other.newPage()
    await otherPage.goto(victimPage.url())
    await otherPage.getByRole('button', { name: 'Allow' }).click()
    await otherPage.waitForURL(/\/authorize\/university\/callback/)
    assert.equal(await otherPage.locator('h1').textContent(), 'Return to the app')
    assert.equal((await sessionOf(stack, user.sessionKey)).body.tier, 'messenger-registered')
    // The user's own round trip still completes.
    await victimPage.getByRole('button', { name: 'Allow' }).click()
    await victimPage.waitForURL(/\/authorize\/university\/callback/)
    assert.equal(await victimPage.locator('h1').textContent(), 'University account linked')
    await victim.close()
    await other.close()
  })
})

/** The same round trip with UNIVERSITY_PROTOCOL=oidc against oidc-provider's own pages. */
describe('the tier 2 round trip in Chromium through OpenID Connect', () => {
  let stack: OidcStack
  let browser: Browser
  before(async () => {
    stack = await startOidcStack()
    browser = await launch()
  })
  after(async () => {
    await browser?.close()
    await stack?.close()
  })

  it('links the member the user signs in as, and names them', async () => {
    const user = await registerMessenger(stack)
    const link = await requestConfirmationLink(stack, user.sessionKey, 'oidc@example.edu')
    const page = await browser.newPage()
    await page.goto(link)
    assert.equal(await page.title(), 'University sign-in')
    await page.getByLabel(/Bob Example/).check()
    await page.getByRole('button', { name: 'Allow' }).click()
    await page.waitForURL(/\/authorize\/university\/callback/)
    assert.equal(await page.locator('h1').textContent(), 'University account linked')
    assert.match((await page.locator('body').textContent()) ?? '', /Bob Example/)
    await page.close()
    const session = await sessionOf(stack, user.sessionKey)
    assert.equal(session.body.tier, 'university-registered')
    assert.equal(session.body.university.subject, 'bob-0002')
  })

  it('links nothing when the user presses Deny, and says so', async () => {
    const user = await registerMessenger(stack)
    const link = await requestConfirmationLink(stack, user.sessionKey, 'oidc-denier@example.edu')
    const page = await browser.newPage()
    await page.goto(link)
    await page.getByRole('button', { name: 'Deny' }).click()
    await page.waitForURL(/\/authorize\/university\/callback/)
    assert.equal(await page.locator('h1').textContent(), 'Authorization declined')
    await page.close()
    assert.equal((await sessionOf(stack, user.sessionKey)).body.tier, 'messenger-registered')
  })
})
