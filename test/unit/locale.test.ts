import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { chooseLocale, parseLocale } from '../../src/lib/locale.js'
import { callbackPage } from '../../src/university/pages.js'
import { confirmationEmail, describeDuration } from '../../src/university/confirmation-email.js'

describe('chooseLocale', () => {
  it('gives English without a header, for *, for English and for languages it does not speak', () => {
    for (const header of [undefined, '', '*', 'en', 'en-GB', 'EN-us', 'fr', 'de-DE, fr;q=0.5']) {
      assert.equal(chooseLocale(header), 'en', String(header))
    }
  })

  it('gives Simplified Chinese for every Chinese tag', () => {
    for (const header of ['zh', 'zh-CN', 'zh-Hans', 'zh-SG', 'zh-Hans-CN', 'ZH-cn', 'zh-TW']) {
      assert.equal(chooseLocale(header), 'zh-CN', header)
    }
  })

  it('follows the q-values, then the order of the header', () => {
    assert.equal(chooseLocale('en;q=0.5, zh-CN;q=0.9'), 'zh-CN')
    assert.equal(chooseLocale('zh-CN;q=0.4, en-US;q=0.8'), 'en')
    assert.equal(chooseLocale('zh-CN,zh;q=0.9,en;q=0.8'), 'zh-CN')
    assert.equal(chooseLocale('en-US,en;q=0.9,zh-CN;q=0.8'), 'en')
    assert.equal(chooseLocale('fr-FR, zh;q=0.7, en;q=0.3'), 'zh-CN')
    assert.equal(chooseLocale('zh, en'), 'zh-CN')
    assert.equal(chooseLocale('en, zh'), 'en')
  })

  it('treats q=0 as a refusal and ignores a malformed q', () => {
    assert.equal(chooseLocale('zh;q=0'), 'en')
    assert.equal(chooseLocale('en;q=0, zh;q=0.1'), 'zh-CN')
    assert.equal(chooseLocale('en;q=0, *'), 'zh-CN')
    assert.equal(chooseLocale('zh;q=2, en;q=0.5'), 'en')
    assert.equal(chooseLocale('zh;q=abc'), 'en')
    assert.equal(chooseLocale('zh;q=0.5;x=y, en;q=0.4'), 'zh-CN')
  })

  it('ignores empty and odd ranges', () => {
    assert.equal(chooseLocale(',,;q=1, zh'), 'zh-CN')
    assert.equal(chooseLocale('   '), 'en')
  })
})

describe('parseLocale (the switch)', () => {
  it('names exactly the locales, in any case', () => {
    assert.equal(parseLocale('en'), 'en')
    assert.equal(parseLocale('zh-CN'), 'zh-CN')
    assert.equal(parseLocale('zh-cn'), 'zh-CN')
    for (const value of ['zh', 'fr', '', undefined, ['en'], 'en-GB']) {
      assert.equal(parseLocale(value), null, String(value))
    }
  })
})

describe('the pages and the email in Chinese', () => {
  it('writes the callback page in the chosen language, the other inline', () => {
    const html = callbackPage({ outcome: 'linked', boundToBrowser: true }, 'zh-CN')
    assert.match(html, /<html lang="zh-CN">/)
    assert.match(html, /<h1>大学账号已关联<\/h1>/)
    assert.match(html, /<div class="alt" id="in-en" lang="en">/)
    assert.match(html, /University account linked/)
  })

  it('writes the email in both languages, the requester’s first and in the subject', () => {
    const link = 'https://campusgate.example/authorize/university?universityRegistrationCode=x'
    const at = new Date('2026-11-23T18:05:00Z')
    const zh = confirmationEmail('s@example.edu', link, 30 * 60_000, at, 'zh-CN')
    assert.equal(zh.subject, '确认你的大学身份注册')
    assert.match(zh.html, /<html lang="zh-CN">/)
    assert.ok(zh.text.indexOf('确认你的大学身份注册') < zh.text.indexOf('Confirm your'))
    assert.match(zh.text, /2026年11月23日 18:05（UTC）/)
    assert.match(zh.text, /链接在 30 分钟内有效/)
    assert.match(zh.text, /On 23 November 2026 at 18:05 UTC/)
    const en = confirmationEmail('s@example.edu', link, 30 * 60_000, at)
    assert.equal(en.subject, 'Confirm your university registration')
    assert.ok(en.text.startsWith('Confirm your university registration\n'))
    assert.ok(en.text.includes('确认你的大学身份注册'))
  })

  it('says how long the link works in Chinese', () => {
    assert.equal(describeDuration(90_000, 'zh-CN'), '1 分钟 30 秒')
    assert.equal(describeDuration(2 * 3_600_000, 'zh-CN'), '2 小时')
  })
})
