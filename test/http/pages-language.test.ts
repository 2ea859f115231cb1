import { readFileSync } from 'node:fs'
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { call, startService, type RunningService } from '../helpers/service.js'
import { linkIn, recipients, startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'
import {
  CLIENT_ID,
  decideAtProvider,
  openLink,
  registerMessenger,
  startStack,
  type Stack,
} from '../helpers/stack.js'

const PAGE_POLICY = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"

/** GET a page as a browser whose language is `acceptLanguage`. */
async function page(url: string, acceptLanguage?: string, cookie?: string) {
  const headers: Record<string, string> = { accept: 'text/html,*/*;q=0.8' }
  if (acceptLanguage !== undefined) headers['accept-language'] = acceptLanguage
  if (cookie !== undefined) headers.cookie = cookie
  const response = await fetch(url, { headers, redirect: 'manual' })
  return { status: response.status, headers: response.headers, text: await response.text() }
}

describe('pages and the confirmation email in the reader’s language', () => {
  let stack: Stack
  before(async () => {
    stack = await startStack()
  })
  after(() => stack.close())

  async function confirmationMail(email: string, acceptLanguage?: string) {
    const user = await registerMessenger(stack)
    const headers: Record<string, string> = { authorization: user.sessionKey }
    if (acceptLanguage !== undefined) headers['accept-language'] = acceptLanguage
    const before = stack.smtp.messages.length
    const response = await call(`${stack.service.url}/register/university`, {
      method: 'POST',
      headers,
      json: { email },
    })
    const mail = await stack.smtp.waitFor(
      (m) => stack.smtp.messages.indexOf(m) >= before && recipients(m).includes(email),
    )
    return { user, response, mail }
  }

  it('answers the callback page in Chinese for Accept-Language: zh-CN, and says it varies', async () => {
    const { user, mail } = await confirmationMail('zh-page@example.edu', 'zh-CN')
    const opened = await openLink(linkIn(mail))
    const callback = await decideAtProvider(stack, user.openId, 'allow')
    const done = await page(callback, 'zh-CN,zh;q=0.9,en;q=0.8', opened.cookie)
    assert.equal(done.status, 200)
    assert.equal(done.headers.get('content-type'), 'text/html; charset=utf-8')
    assert.equal(done.headers.get('vary'), 'Accept-Language')
    assert.equal(done.headers.get('content-security-policy'), PAGE_POLICY)
    assert.match(done.text, /<html lang="zh-CN">/)
    assert.match(done.text, /<h1>大学账号已关联<\/h1>/)
    // The switch shows the English page carried inline: the callback is never asked again.
    assert.match(done.text, /<a href="#in-en" hreflang="en" lang="en">English<\/a>/)
    assert.match(done.text, /University account linked/)
  })

  it('answers in English by default, for * and for English', async () => {
    const headers = [undefined, '*', 'en-GB,en;q=0.9,zh;q=0.8', 'fr']
    for (const [index, acceptLanguage] of headers.entries()) {
      const { user, mail } = await confirmationMail(`en-${index}@example.edu`)
      const opened = await openLink(linkIn(mail))
      const callback = await decideAtProvider(stack, user.openId, 'deny')
      const done = await page(callback, acceptLanguage, opened.cookie)
      assert.match(done.text, /<html lang="en">/, String(acceptLanguage))
      assert.match(done.text, /<h1>Authorization declined<\/h1>/)
    }
  })

  it('answers the provider (no text/html) with the same {} and no Vary', async () => {
    const done = await fetch(`${stack.service.url}/authorize/university/callback?state=x`, {
      headers: { 'accept-language': 'zh-CN' },
    })
    assert.equal(done.status, 200)
    assert.deepEqual(await done.json(), {})
    assert.equal(done.headers.get('vary'), null)
  })

  it('mails the requester’s language first, and in the subject; the answer is unchanged', async () => {
    const { response, mail } = await confirmationMail('zh-mail@example.edu', 'zh-CN')
    assert.equal(response.status, 200)
    assert.deepEqual(response.body, {})
    assert.equal(response.headers.get('vary'), null)
    assert.equal(mail.subject, '确认你的大学身份注册')
    const text = mail.text ?? ''
    assert.ok(text.indexOf('确认你的大学身份注册') < text.indexOf('Confirm your'), text)
    assert.match(text, /链接在 30 分钟内有效/)
    assert.match(text, /The link is valid for 30 minutes\./)
    assert.match(mail.html as string, /<html lang="zh-CN">/)
  })

  it('serves the provider’s Allow page in Chinese, with a switch to English', async () => {
    const url = `${stack.providersUrl}/_sandbox/university/authorise?client_id=${CLIENT_ID}&state=s`
    const zh = await page(url, 'zh-Hans')
    assert.equal(zh.status, 200)
    assert.equal(zh.headers.get('vary'), 'Accept-Language')
    assert.match(zh.text, /<html lang="zh-CN">/)
    assert.match(zh.text, />允许<\/button>/)
    assert.match(zh.text, /href="\/_sandbox\/university\/authorise\?client_id=[^"]*&amp;lang=en"/)
    const en = await page(`${url}&lang=en`, 'zh-CN')
    assert.match(en.text, /<html lang="en">/)
    assert.match(en.text, /value="allow">Allow<\/button>/)
  })
})

describe('the sandbox playground', () => {
  let smtp: SmtpSink
  let service: RunningService
  before(async () => {
    smtp = await startSmtpSink()
    service = await startService({ SMTP_URL: smtp.url })
  })
  after(async () => {
    await service.close()
    await smtp.stop()
  })

  it('is served in Chinese for Accept-Language: zh-CN, in English with ?lang=en', async () => {
    const zh = await page(`${service.url}/_sandbox/`, 'zh-CN')
    assert.equal(zh.status, 200)
    assert.equal(zh.headers.get('vary'), 'Accept-Language')
    assert.match(zh.text, /<html lang="zh-CN">/)
    assert.match(zh.text, /<h1>campusgate 沙盒<\/h1>/)
    assert.match(zh.text, /<a href="\/_sandbox\/\?lang=en" hreflang="en" lang="en">English<\/a>/)
    assert.match(zh.text, /<script src="\/_sandbox\/playground\.js" defer><\/script>/)
    // The curl walk-through stays below the playground.
    assert.ok(zh.text.includes('/_sandbox/messenger/login-codes'))
    assert.equal(
      zh.headers.get('content-security-policy'),
      "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; " +
        "frame-ancestors 'none'",
    )
    const en = await page(`${service.url}/_sandbox/?lang=en`, 'zh-CN')
    assert.match(en.text, /<html lang="en">/)
    assert.match(en.text, /<h1>campusgate sandbox<\/h1>/)
    const script = await fetch(`${service.url}/_sandbox/playground.js`)
    assert.equal(script.status, 200)
    assert.equal(script.headers.get('content-type'), 'text/javascript; charset=utf-8')
    // The files the linter and the formatter see are what the browser gets.
    assert.equal(await script.text(), readFileSync('assets/playground.js', 'utf8'))
    assert.ok(en.text.includes(`<style>${readFileSync('assets/page.css', 'utf8')}</style>`))
  })

  it('keeps the mails it delivered for the playground to read', async () => {
    const minted = await call(`${service.url}/_sandbox/messenger/login-codes`, { method: 'POST' })
    const registered = await call(`${service.url}/register/messenger`, {
      method: 'POST',
      json: { appId: 'wx-sandbox-app', appSecret: 'sandbox-app-secret', code: minted.body.code },
    })
    const email = 'mailbox@sandbox-university.example'
    await call(`${service.url}/register/university`, {
      method: 'POST',
      headers: { authorization: registered.body.sessionKey },
      json: { email },
    })
    const delivered = await smtp.waitFor((mail) => recipients(mail).includes(email))
    const box = await call(
      `${service.url}/_sandbox/mailbox?to=${encodeURIComponent(email.toUpperCase())}`,
    )
    assert.equal(box.status, 200)
    assert.equal(box.body.mails.length, 1)
    assert.equal(box.body.mails[0].subject, delivered.subject)
    assert.ok((box.body.mails[0].text as string).includes(linkIn(delivered)))
    assert.equal((await call(`${service.url}/_sandbox/mailbox`)).status, 400)
  })
})
