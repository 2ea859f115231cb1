import assert from 'node:assert/strict'
import { mkdir } from 'node:fs/promises'
import { after, before, describe, it } from 'node:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { launchChromium } from '../helpers/chromium.js'
import { call, startService, type RunningService } from '../helpers/service.js'
import { linkIn, recipients, startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'

/**
 * The pages people see, in sandbox mode, at phone size, in English and in Chinese: the
 * playground walked through by its buttons, the university's Allow / Deny page, the callback's
 * result pages and the confirmation email. Screenshots go to docs/screenshots (docs/pages.md).
 */
const SCREENSHOTS = 'docs/screenshots'
const PHONE = { width: 390, height: 844 }
const LOCALES = ['en', 'zh-CN'] as const
type Locale = (typeof LOCALES)[number]

const WORDS = {
  en: {
    subject: 'Confirm your university registration',
    linked: 'University account linked',
    declined: 'Authorization declined',
    allow: 'Allow',
    deny: 'Deny',
    other: '中文',
    otherLinked: '大学账号已关联',
  },
  'zh-CN': {
    subject: '确认你的大学身份注册',
    linked: '大学账号已关联',
    declined: '已拒绝授权',
    allow: '允许',
    deny: '拒绝',
    other: 'English',
    otherLinked: 'University account linked',
  },
} as const

describe('the pages people see, at phone size, in both languages', () => {
  let smtp: SmtpSink
  let service: RunningService
  let browser: Browser

  before(async () => {
    await mkdir(SCREENSHOTS, { recursive: true })
    smtp = await startSmtpSink()
    // No provider configured: sandbox mode, the playground on /_sandbox/.
    service = await startService({
      SMTP_URL: smtp.url,
      MAIL_LIMIT_PER_USER: '1000',
      MAIL_LIMIT_PER_RECIPIENT: '1000',
    })
    browser = await launchChromium()
  })
  after(async () => {
    await browser?.close()
    await service?.close()
    await smtp?.stop()
  })

  function phone(locale: Locale): Promise<BrowserContext> {
    return browser.newContext({ viewport: PHONE, locale, isMobile: true, hasTouch: true })
  }

  async function shoot(page: Page, name: string): Promise<void> {
    await page.screenshot({ path: `${SCREENSHOTS}/${name}.png`, fullPage: true })
  }

  /** Tier 1 and the confirmation email through the API, asked for in `locale`. */
  async function confirmationLink(locale: Locale, email: string): Promise<string> {
    const minted = await call(`${service.url}/_sandbox/messenger/login-codes`, { method: 'POST' })
    const registered = await call(`${service.url}/register/messenger`, {
      method: 'POST',
      json: { appId: 'wx-sandbox-app', appSecret: 'sandbox-app-secret', code: minted.body.code },
    })
    const asked = await call(`${service.url}/register/university`, {
      method: 'POST',
      headers: { authorization: registered.body.sessionKey, 'accept-language': locale },
      json: { email },
    })
    assert.equal(asked.status, 200, asked.text)
    return linkIn(await smtp.waitFor((mail) => recipients(mail).includes(email), 15_000))
  }

  for (const locale of LOCALES) {
    const words = WORDS[locale]

    it(`walks the whole flow in the playground, in ${locale}`, async () => {
      const context = await phone(locale)
      const page = await context.newPage()
      await page.goto(`${service.url}/_sandbox/`)
      assert.equal(await page.locator('html').getAttribute('lang'), locale)
      await page.locator('body[data-playground="ready"]').waitFor()
      await shoot(page, `playground-start-${locale}`)

      const output = (step: string) => page.locator(`[data-output="${step}"]`)
      async function press(action: string, step: string, expected: RegExp): Promise<string> {
        await page.locator(`[data-action="${action}"]`).click()
        await output(step).filter({ hasText: expected }).waitFor({ timeout: 20_000 })
        return (await output(step).textContent()) ?? ''
      }

      await press('mint', 'mint', /← 200/)
      const registered = await press('register', 'register', /"sessionKey": "/)
      assert.match(registered, /"sessionKey": "[A-Za-z0-9_-]{4}…[A-Za-z0-9_-]{4}"/)
      assert.doesNotMatch(registered, /[A-Za-z0-9_-]{43}/, 'the session key is shown masked')
      await press('session', 'session', /"tier": "messenger-registered"/)
      await page.locator('#email').fill(`playground-${locale}@sandbox-university.example`)
      await press('email', 'email', /← 200/)
      await press('mail', 'mail', new RegExp(words.subject))
      await press('link', 'link', /← 200 text\/html/)
      await press('allow', 'decide', new RegExp(words.linked))
      const session = await press('session-again', 'session-again', /university-registered/)
      assert.match(session, /"university"/)
      await shoot(page, `playground-${locale}`)
      await press('logout', 'logout', /← 401/)
      await context.close()
    })

    it(`shows the Allow page and the callback's result pages, in ${locale}`, async () => {
      const context = await phone(locale)
      const page = await context.newPage()

      await page.goto(await confirmationLink(locale, `allow-${locale}@sandbox-university.example`))
      assert.equal(await page.locator('html').getAttribute('lang'), locale)
      await shoot(page, `authorise-${locale}`)
      await page.getByRole('button', { name: words.allow }).click()
      await page.waitForURL(/\/authorize\/university\/callback/)
      assert.equal(await page.locator('html').getAttribute('lang'), locale)
      assert.equal(await page.locator('h1').textContent(), words.linked)
      await shoot(page, `callback-linked-${locale}`)
      // The switch shows the other language without asking the callback again.
      await page.getByRole('link', { name: words.other }).click()
      assert.equal(await page.locator('.alt:target .h1').textContent(), words.otherLinked)
      assert.equal(await page.locator('.primary').isVisible(), false)

      await page.goto(await confirmationLink(locale, `deny-${locale}@sandbox-university.example`))
      await page.getByRole('button', { name: words.deny }).click()
      await page.waitForURL(/\/authorize\/university\/callback/)
      assert.equal(await page.locator('h1').textContent(), words.declined)
      await shoot(page, `callback-declined-${locale}`)
      await context.close()
    })

    it(`renders the confirmation email, ${locale} first`, async () => {
      const email = `mail-${locale}@sandbox-university.example`
      await confirmationLink(locale, email)
      const mail = await smtp.waitFor((each) => recipients(each).includes(email))
      assert.equal(mail.subject, words.subject)
      const context = await phone(locale)
      const page = await context.newPage()
      await page.setContent(mail.html as string)
      assert.equal(await page.locator('html').getAttribute('lang'), locale)
      assert.equal(await page.locator('h1').first().textContent(), words.subject)
      await shoot(page, `email-${locale}`)
      await context.close()
    })
  }
})
