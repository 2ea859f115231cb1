import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { after, before, describe, it } from 'node:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { launchChromium } from '../helpers/chromium.js'
import { consoleLink, TEST_KEY } from '../helpers/console.js'
import { registerMessenger, registerUniversity, startStack, type Stack } from '../helpers/stack.js'
import {
  newWebhookSecret,
  startWebhookReceiver,
  type WebhookReceiver,
} from '../helpers/webhook-receiver.js'

/**
 * The operator console in headless Chromium at phone size: a sign-in link, the overview, a user
 * found, revoked and erased, a dead event retried — by keyboard where a person would use it —
 * with zero axe-core violations and zero CSP violations on every page. Screenshots of each page
 * in both languages go to docs/screenshots (docs/console.md).
 */
const SCREENSHOTS = 'docs/screenshots'
const PHONE = { width: 390, height: 844 }
const AXE_SOURCE = readFileSync(
  createRequire(import.meta.url).resolve('axe-core/axe.min.js'),
  'utf8',
)

interface AxeResults {
  violations: { id: string; impact: string | null; nodes: { target: unknown[] }[] }[]
}

describe('the operator console in a browser', () => {
  let stack: Stack
  let receiver: WebhookReceiver
  let browser: Browser
  let failing = true
  /** Every CSP violation any page reported, as the browser logs it. */
  const cspViolations: string[] = []

  before(async () => {
    await mkdir(SCREENSHOTS, { recursive: true })
    const secret = newWebhookSecret()
    receiver = await startWebhookReceiver(secret)
    receiver.answer = () => (failing ? 500 : 200)
    stack = await startStack({
      DATA_ENCRYPTION_KEY: TEST_KEY,
      WEBHOOK_URL: receiver.url,
      WEBHOOK_SECRET: secret,
      WEBHOOK_RETRY_FOR: '2m',
    })
    stack.service.clock.advance(Date.now() - stack.service.clock.now().getTime())
    browser = await launchChromium()
  })
  after(async () => {
    await browser?.close()
    await stack?.close()
    await receiver?.close()
  })

  async function phone(locale: 'en' | 'zh-CN'): Promise<BrowserContext> {
    const context = await browser.newContext({
      viewport: PHONE,
      locale,
      isMobile: true,
      hasTouch: true,
    })
    // Installed by the browser before any page script: the pages' own CSP does not apply to it.
    await context.addInitScript(
      "document.addEventListener('securitypolicyviolation', (event) => " +
        'console.error(`CSP violation: ${event.violatedDirective} ${event.blockedURI}`))',
    )
    context.on('console', (message) => {
      const text = message.text()
      if (/CSP violation|Content Security Policy/i.test(text)) cspViolations.push(text)
    })
    return context
  }

  /** axe-core over the page as it is now, evaluated through the debugging protocol (not a <script>). */
  async function checkPage(page: Page, name: string): Promise<void> {
    await page.evaluate(AXE_SOURCE)
    const results = await page.evaluate<AxeResults>('axe.run(document)')
    assert.deepEqual(
      results.violations.map(
        (v) => `${v.id} (${v.impact}): ${JSON.stringify(v.nodes.map((n) => n.target))}`,
      ),
      [],
      `${name}: axe-core violations`,
    )
    const width = Number(await page.evaluate('document.documentElement.scrollWidth'))
    assert.ok(width <= PHONE.width, `${name}: fits 390 px (${width})`)
    await page.screenshot({ path: `${SCREENSHOTS}/console-${name}.png`, fullPage: true })
  }

  /** The same page in Chinese (the switch writes ?lang=zh-CN), checked and shot. */
  async function inChinese(page: Page, name: string): Promise<void> {
    const url = new URL(page.url())
    url.searchParams.set('lang', 'zh-CN')
    await page.goto(url.toString())
    assert.equal(await page.locator('html').getAttribute('lang'), 'zh-CN')
    await checkPage(page, `${name}-zh-CN`)
  }

  it('walks link → overview → find a user → revoke → erase → retry a dead event, in reach of the keyboard', async () => {
    // A user with a dead event, a linked user, traffic for the charts.
    const doomed = await registerMessenger(stack)
    for (let round = 0; round < 5; round += 1) {
      await stack.service.webhookWorker!.runOnce()
      stack.service.clock.advance(60_000)
    }
    await stack.service.webhookWorker!.runOnce()
    failing = false
    const linked = await registerUniversity(stack, 'linked@example.edu')
    await stack.service.webhookWorker!.runOnce()

    const context = await phone('en')
    const page = await context.newPage()
    const weights = new Map<string, number>()
    page.on('response', (response) => {
      void response.body().then(
        (body) => weights.set(new URL(response.url()).pathname, body.length),
        () => undefined,
      )
    })

    // Without a session: the sign-in page, and a link that has been used.
    await page.goto(`${stack.service.url}/console`)
    assert.equal(new URL(page.url()).pathname, '/console/sign-in')
    await checkPage(page, 'sign-in-en')
    await inChinese(page, 'sign-in')

    const { address } = await consoleLink(stack.service, 'alice')
    await page.goto(address)
    await page.waitForURL(`${stack.service.url}/console`)
    assert.equal(await page.locator('h1').textContent(), 'Overview')
    assert.equal(await page.getByRole('img', { name: /^New users per day: \d+/ }).count(), 1)
    await checkPage(page, 'overview-en')
    const overviewWeight =
      (weights.get('/console') ?? 0) +
      (weights.get('/console/assets/console.css') ?? 0) +
      (weights.get('/console/assets/console.js') ?? 0)
    console.log(`overview page weight: ${overviewWeight} bytes uncompressed`)
    assert.ok(overviewWeight > 0 && overviewWeight < 60_000, `page weight ${overviewWeight}`)
    await inChinese(page, 'overview')

    // The used link: 401 and a page that says so.
    const used = await context.newPage()
    await used.goto(address)
    await used.locator('h1', { hasText: 'This sign-in link is invalid or used' }).waitFor()
    await checkPage(used, 'link-used-en')
    await used.close()
    const chinese = await phone('zh-CN')
    const usedInChinese = await chinese.newPage()
    await usedInChinese.goto(address)
    await usedInChinese.locator('h1', { hasText: '此登录链接无效或已被使用' }).waitFor()
    await checkPage(usedInChinese, 'link-used-zh-CN')
    await chinese.close()

    // Find the user, by keyboard.
    await page.goto(`${stack.service.url}/console`)
    await page.getByRole('link', { name: 'Users' }).focus()
    await page.keyboard.press('Enter')
    await page.waitForURL(/\/console\/users$/)
    const search = page.getByRole('searchbox', { name: 'Search users' })
    await search.focus()
    await page.keyboard.type(doomed.openId)
    await page.keyboard.press('Enter')
    await page.waitForURL(/\/console\/users\?q=/)
    await checkPage(page, 'users-en')
    await inChinese(page, 'users')
    await page.goBack()
    await page.getByRole('link', { name: doomed.openId }).focus()
    await page.keyboard.press('Enter')
    await page.waitForURL(/\/console\/users\/[^?]+$/)
    await checkPage(page, 'user-en')

    // Revoke, then erase with the typed confirmation.
    await page.getByRole('button', { name: 'Revoke session' }).focus()
    await page.keyboard.press('Enter')
    await page.getByRole('status').filter({ hasText: 'The session is revoked.' }).waitFor()
    await page.getByLabel('Type the openId to confirm').fill(doomed.openId)
    await page.getByRole('button', { name: 'Erase user' }).focus()
    await page.keyboard.press('Enter')
    await page.getByRole('status').filter({ hasText: 'The user is erased.' }).waitFor()

    // The linked user's page, with its university identity, in both languages.
    await page.getByRole('searchbox', { name: 'Search users' }).fill(linked.openId)
    await page.keyboard.press('Enter')
    await page.getByRole('link', { name: linked.openId }).click()
    await page.waitForURL(/\/console\/users\/[^?]+$/)
    await inChinese(page, 'user')

    // Retry the dead event.
    await page.goto(`${stack.service.url}/console/events?state=dead`)
    await checkPage(page, 'events-en')
    await inChinese(page, 'events')
    await page.goto(`${stack.service.url}/console/events?state=dead`)
    await page.getByRole('button', { name: 'Retry' }).first().focus()
    await page.keyboard.press('Enter')
    await page.getByRole('status').filter({ hasText: 'The event is pending again.' }).waitFor()

    await page.goto(`${stack.service.url}/console/mail`)
    await checkPage(page, 'mail-en')
    await inChinese(page, 'mail')
    await page.goto(`${stack.service.url}/console/audit?type=console-sign-in`)
    assert.ok((await page.getByRole('cell', { name: 'console:alice' }).count()) > 0)
    await checkPage(page, 'audit-en')
    await inChinese(page, 'audit')

    // Sign out, by keyboard.
    await page.getByRole('button', { name: '退出登录' }).focus()
    await page.keyboard.press('Enter')
    await page.waitForURL(/\/console\/sign-in$/)
    await context.close()

    assert.deepEqual(cspViolations, [], 'no page reported a CSP violation')
  })
})
