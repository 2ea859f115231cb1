import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdir, readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { after, before, describe, it } from 'node:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { hashSecret } from '../../src/lib/secrets.js'
import { launchChromium } from '../helpers/chromium.js'
import { consoleLink, TEST_KEY } from '../helpers/console.js'
import { registerMessenger, registerUniversity, startStack, type Stack } from '../helpers/stack.js'
import {
  newWebhookSecret,
  startWebhookReceiver,
  type WebhookReceiver,
} from '../helpers/webhook-receiver.js'

/**
 * The operator console in headless Chromium at phone size: a sign-in link pasted into the tab
 * already showing the sign-in page, a deep link kept through sign-in, the overview, the users
 * list, a user revoked, downloaded and erased, page 2 of the events and "Retry all", a viewer
 * refused — by keyboard where a person would use it — with zero axe-core violations and zero CSP
 * violations on every page, in both languages. Screenshots of each page go to docs/screenshots
 * (docs/console.md).
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
      timezoneId: 'Asia/Shanghai',
      isMobile: true,
      hasTouch: true,
      acceptDownloads: true,
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
    await page.getByRole('link', { name: '中文' }).click()
    await page.waitForURL(/lang=zh-CN/)
    assert.equal(await page.locator('html').getAttribute('lang'), 'zh-CN')
    await checkPage(page, `${name}-zh-CN`)
  }

  /** Runs the webhook worker until the receiver's failures have made every event dead. */
  async function killEvents(): Promise<void> {
    const worker = stack.service.webhookWorker!
    await worker.runOnce()
    for (let round = 0; round < 8; round += 1) {
      stack.service.clock.advance(30_000)
      await worker.runOnce()
    }
  }

  it('walks sign-in, the lists, a user, page 2 of the events, Retry all and a download, in reach of the keyboard', async () => {
    // 26 users with dead events (52: past one page), a linked user, traffic for the charts.
    const doomed = await registerMessenger(stack)
    for (let index = 0; index < 25; index += 1) await registerMessenger(stack)
    await killEvents()
    const linked = await registerUniversity(stack, 'linked@example.edu')

    const context = await phone('en')
    const page = await context.newPage()
    const weights = new Map<string, number>()
    page.on('response', (response) => {
      void response.body().then(
        (body) => weights.set(new URL(response.url()).pathname, body.length),
        () => undefined,
      )
    })

    // Without a session: the sign-in page, with no button. A link pasted into this tab (no
    // reload) makes the page ask whom it signs in as and offer the button; it waits for the press.
    await page.goto(`${stack.service.url}/console`)
    assert.equal(new URL(page.url()).pathname, '/console/sign-in')
    assert.equal(await page.getByRole('button').count(), 0, 'no button without a link')
    await checkPage(page, 'sign-in-en')
    await inChinese(page, 'sign-in')
    await page.goto(`${stack.service.url}/console/sign-in`)
    const { address } = await consoleLink(stack.service, 'alice')
    const requested: string[] = []
    const onRequest = (request: { method(): string; url(): string }) =>
      requested.push(`${request.method()} ${new URL(request.url()).pathname}`)
    page.on('request', onRequest)
    await page.goto(address)
    const button = page.getByRole('button', { name: 'Sign in as alice (admin)' })
    await button.waitFor()
    // Only the fragment changed: no reload, and nothing was signed in yet.
    assert.deepEqual(requested, ['POST /console/sign-in/describe'])
    assert.equal(new URL(page.url()).hash, '', 'the token left the address bar')
    await checkPage(page, 'sign-in-link-en')
    await button.focus()
    await page.keyboard.press('Enter')
    await page.waitForURL(`${stack.service.url}/console`)
    page.off('request', onRequest)
    assert.equal(requested[1], 'POST /console/sign-in', requested.join(', '))
    assert.equal(await page.locator('h1').textContent(), 'Overview')
    assert.equal(
      await page.getByRole('img', { name: /^New users, total of the last 30 days: \d+/ }).count(),
      1,
    )
    await checkPage(page, 'overview-en')
    const assets = [...weights.keys()].filter((path) => path.startsWith('/console/assets/'))
    const overviewWeight = [...assets, '/console'].reduce(
      (sum, path) => sum + (weights.get(path) ?? 0),
      0,
    )
    console.log(`overview page weight: ${overviewWeight} bytes uncompressed`)
    assert.ok(overviewWeight > 0 && overviewWeight < 60_000, `page weight ${overviewWeight}`)
    // Times are the browser's: Shanghai is UTC+8, and no "UTC" is left on the page.
    assert.doesNotMatch((await page.locator('main').textContent()) ?? '', / UTC\b(?! day)/)
    await inChinese(page, 'overview')

    // The used link: the page says so, and offers no button.
    const used = await context.newPage()
    await used.goto(address)
    await used
      .getByRole('status')
      .filter({ hasText: 'This sign-in link is invalid or used' })
      .waitFor()
    assert.equal(await used.getByRole('button').count(), 0)
    await checkPage(used, 'link-used-en')
    await used.close()
    const chinese = await phone('zh-CN')
    const usedInChinese = await chinese.newPage()
    await usedInChinese.goto(address)
    await usedInChinese
      .getByRole('status')
      .filter({ hasText: '此登录链接无效或已被使用' })
      .waitFor()
    assert.equal(await usedInChinese.getByRole('button').count(), 0)
    await checkPage(usedInChinese, 'link-used-zh-CN')

    // A deep link asked without a session comes back after sign-in, in its language.
    const deep = `${stack.service.url}/console/users/${encodeURIComponent(linked.openId)}?lang=zh-CN`
    await usedInChinese.goto(deep)
    await usedInChinese.waitForURL(/\/console\/sign-in\?next=/)
    await usedInChinese.goto((await consoleLink(stack.service, 'alice')).address)
    await usedInChinese.getByRole('button', { name: '以 alice（管理员）身份登录' }).click()
    await usedInChinese.waitForURL(deep)
    assert.equal(await usedInChinese.locator('h1').textContent(), linked.openId)
    await chinese.close()

    // The users list, then a search, by keyboard.
    await page.goto(`${stack.service.url}/console`)
    await page.getByRole('link', { name: 'Users' }).focus()
    await page.keyboard.press('Enter')
    await page.waitForURL(/\/console\/users$/)
    await page
      .getByText(/^1–\d+ of \d+$/)
      .first()
      .waitFor()
    await checkPage(page, 'users-en')
    await inChinese(page, 'users')
    await page.goto(`${stack.service.url}/console/users`)
    const search = page.getByRole('searchbox', { name: 'Search users' })
    await search.focus()
    // Any part of the openId, in any case.
    await page.keyboard.type(doomed.openId.slice(4, 16).toUpperCase())
    await page.keyboard.press('Enter')
    await page.waitForURL(/\/console\/users\?q=/)
    await page.getByRole('link', { name: doomed.openId }).focus()
    await page.keyboard.press('Enter')
    await page.waitForURL(/\/console\/users\/[^?]+$/)
    await checkPage(page, 'user-en')

    // Download what campusgate holds about the user, then revoke and erase.
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Download data' }).click(),
    ])
    const document = JSON.parse(await readFile(await download.path(), 'utf8')) as {
      user: { openId: string }
    }
    assert.equal(document.user.openId, doomed.openId)
    // "Revoke all sessions" asks first, saying what the student loses; then comes back here.
    const userUrl = page.url()
    await page.getByRole('button', { name: 'Revoke all sessions' }).focus()
    await page.keyboard.press('Enter')
    await page.waitForURL(/\/revoke-all\?/)
    await page.getByText(/until they prove membership again|The student is at tier 1/).waitFor()
    await checkPage(page, 'revoke-all-en')
    await page.getByRole('button', { name: 'Revoke all sessions' }).focus()
    await page.keyboard.press('Enter')
    await page.getByRole('status').filter({ hasText: 'Every session is revoked: 1.' }).waitFor()
    assert.equal(page.url().split('?')[0], userUrl, 'back on the page it came from')
    assert.equal(await page.getByRole('button', { name: 'Revoke session' }).count(), 0)
    await page.getByLabel('Type the openId to confirm').fill(doomed.openId)
    await page.getByRole('button', { name: 'Erase user' }).focus()
    await page.keyboard.press('Enter')
    await page.getByRole('status').filter({ hasText: 'Users erased: 1.' }).waitFor()

    // The linked user's page, with its university identity, in Chinese.
    await page.goto(`${stack.service.url}/console/users/${encodeURIComponent(linked.openId)}`)
    await inChinese(page, 'user')

    // Dead events of the endpoint: page 2 (from the pager under the list), then "Retry all".
    await page.goto(`${stack.service.url}/console/events?state=dead`)
    await page.getByLabel('Endpoint').selectOption({ index: 1 })
    await page.getByRole('button', { name: 'Show' }).click()
    await page.waitForURL(/endpoint=[0-9a-f]{16}/)
    await page
      .getByText(/^1–50 of 5\d$/)
      .first()
      .waitFor()
    await page.getByRole('link', { name: 'Next' }).last().focus()
    await page.keyboard.press('Enter')
    await page.waitForURL(/page=2/)
    await page
      .getByText(/^51–5\d of 5\d$/)
      .first()
      .waitFor()
    await checkPage(page, 'events-en')
    await inChinese(page, 'events')
    failing = false
    const view = new URL(page.url())
    await page.getByRole('button', { name: '全部重试' }).focus()
    await page.keyboard.press('Enter')
    await page
      .getByRole('status')
      .filter({ hasText: /该端点已失败的投递已重新进入待投递：5\d 个。/ })
      .waitFor()
    // Back to the view it came from: state, endpoint, page and language.
    const back = new URL(page.url())
    for (const name of ['state', 'endpoint', 'page', 'lang']) {
      assert.equal(back.searchParams.get(name), view.searchParams.get(name), name)
    }

    await page.goto(`${stack.service.url}/console/mail`)
    await checkPage(page, 'mail-en')
    await inChinese(page, 'mail')
    await page.goto(`${stack.service.url}/console/audit?type=console-sign-in`)
    assert.ok((await page.getByRole('cell', { name: 'console:alice' }).count()) > 0)
    await checkPage(page, 'audit-en')
    await inChinese(page, 'audit')

    // Sign out, by keyboard, staying in the language.
    await page.getByRole('button', { name: '退出登录' }).focus()
    await page.keyboard.press('Enter')
    await page.waitForURL(/\/console\/sign-in\?lang=zh-CN$/)
    assert.equal(await page.locator('html').getAttribute('lang'), 'zh-CN')
    await context.close()

    assert.deepEqual(cspViolations, [], 'no page reported a CSP violation')
  })

  it('signs nobody in when another site sends the browser to a sign-in link, and says when signing in would switch operators', async () => {
    // Another site (localhost is another site than 127.0.0.1) whose page sends the browser to a
    // sign-in link of its choosing, without the operator doing anything.
    const { address, token } = await consoleLink(stack.service, 'mallory')
    const evil = createServer((_request, response) => {
      response.setHeader('content-type', 'text/html; charset=utf-8')
      response.end(
        `<!doctype html><title>x</title><script>location.href = ${JSON.stringify(address)}</script>`,
      )
    })
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve))
    const evilUrl = `http://localhost:${(evil.address() as AddressInfo).port}/`
    const unused = async () => {
      const row = await stack.service.db.kysely
        .selectFrom('console_sign_in_tokens')
        .select('used_at')
        .where('token_hash', '=', hashSecret(token))
        .executeTakeFirstOrThrow()
      return row.used_at === null
    }
    try {
      for (const locale of ['en', 'zh-CN'] as const) {
        // A browser signed in to nothing: the page says whom the link is for, and waits.
        const fresh = await phone(locale)
        const page = await fresh.newPage()
        const posts: string[] = []
        page.on('request', (request) => {
          if (request.method() === 'POST') posts.push(new URL(request.url()).pathname)
        })
        await page.goto(evilUrl)
        await page.waitForURL(`${stack.service.url}/console/sign-in`)
        const offer =
          locale === 'en' ? 'Sign in as mallory (admin)' : '以 mallory（管理员）身份登录'
        await page.getByRole('button', { name: offer }).waitFor()
        assert.deepEqual(posts, ['/console/sign-in/describe'], 'nothing but the question')
        assert.deepEqual(await fresh.cookies(), [], 'no console cookie')
        assert.ok(await unused(), 'the link is not spent')
        await fresh.close()
      }

      // A browser signed in as alice: the same navigation says it would switch, and switches
      // only on the press.
      const context = await phone('en')
      const page = await context.newPage()
      await page.goto((await consoleLink(stack.service, 'alice')).address)
      await page.getByRole('button', { name: 'Sign in as alice (admin)' }).click()
      await page.waitForURL(`${stack.service.url}/console`)
      await page.goto(evilUrl)
      await page.waitForURL(`${stack.service.url}/console/sign-in`)
      const switchTo = page.getByRole('button', { name: 'Sign in as mallory (admin)' })
      await switchTo.waitFor()
      await page
        .getByText(
          'This browser is signed in as alice (admin). Signing in as mallory (admin) ends that session and switches this browser to mallory (admin).',
        )
        .waitFor()
      assert.ok(await unused())
      await checkPage(page, 'sign-in-switch-en')
      // Nothing happened to the session: the console still belongs to alice.
      const other = await context.newPage()
      await other.goto(`${stack.service.url}/console`)
      assert.match((await other.locator('.who').textContent()) ?? '', /alice/)
      await other.close()
      await switchTo.click()
      await page.waitForURL(`${stack.service.url}/console`)
      assert.match((await page.locator('.who').textContent()) ?? '', /mallory/)
      assert.ok(!(await unused()), 'spent by the press')
      await context.close()
    } finally {
      await new Promise((resolve) => evil.close(resolve))
    }
    assert.deepEqual(cspViolations, [], 'no page reported a CSP violation')
  })

  it('shows a viewer no action and refuses one forged with a valid CSRF token, in both languages', async () => {
    const user = await registerUniversity(stack, 'viewed@example.edu')
    for (const locale of ['en', 'zh-CN'] as const) {
      const context = await phone(locale)
      const page = await context.newPage()
      await page.goto((await consoleLink(stack.service, 'vera', 'viewer')).address)
      await page
        .getByRole('button', {
          name: locale === 'en' ? 'Sign in as vera (viewer)' : '以 vera（只读查看者）身份登录',
        })
        .click()
      await page.waitForURL(`${stack.service.url}/console`)
      await page.goto(`${stack.service.url}/console/users/${encodeURIComponent(user.openId)}`)
      assert.equal(await page.getByRole('button').count(), 1, 'only Sign out')
      await checkPage(page, `user-viewer-${locale}`)
      // The forged request: a form built in the page with its own CSRF token, posted.
      await page.evaluate(`(() => {
        const form = document.createElement('form')
        form.method = 'post'
        form.action = location.pathname + '/unlink'
        const csrf = document.querySelector('input[name=csrf]').cloneNode()
        form.append(csrf)
        document.body.append(form)
        form.submit()
      })()`)
      await page.waitForURL(/\/unlink$/)
      await page
        .locator('h1', {
          hasText: locale === 'en' ? 'Not allowed for your role' : '你的角色不允许此操作',
        })
        .waitFor()
      await checkPage(page, `role-refused-${locale}`)
      await context.close()
    }
    const session = await fetch(`${stack.service.url}/session`, {
      headers: { authorization: user.sessionKey },
    })
    assert.equal(((await session.json()) as { tier: string }).tier, 'university-registered')
    assert.deepEqual(cspViolations, [], 'no page reported a CSP violation')
  })
})
