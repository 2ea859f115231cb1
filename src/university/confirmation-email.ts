import { escapeHtml } from '../lib/html.js'
import { DEFAULT_LOCALE, otherLocales, type Catalogue, type Locale } from '../lib/locale.js'
import type { Mail } from '../mail/transport.js'

function plural(count: number, unit: string): string {
  return `${count} ${unit}${count === 1 ? '' : 's'}`
}

const UNITS: Catalogue<(count: number, unit: 'hour' | 'minute' | 'second') => string> = {
  en: plural,
  'zh-CN': (count, unit) => `${count} ${{ hour: '小时', minute: '分钟', second: '秒' }[unit]}`,
}

/** "30 minutes", "2 hours", "1 minute 30 seconds": how long the link works, in words. */
export function describeDuration(ms: number, locale: Locale = DEFAULT_LOCALE): string {
  const totalSeconds = Math.max(1, Math.floor(ms / 1000))
  const hours = Math.floor(totalSeconds / 3600)
  const minutes = Math.floor((totalSeconds % 3600) / 60)
  const seconds = totalSeconds % 60
  const unit = UNITS[locale]
  const parts = [
    hours > 0 ? unit(hours, 'hour') : '',
    minutes > 0 ? unit(minutes, 'minute') : '',
    seconds > 0 ? unit(seconds, 'second') : '',
  ]
  return parts.filter((part) => part !== '').join(' ')
}

/** "23 November 2026 at 18:05 UTC": when the email was asked for, unambiguous for any reader. */
export function describeMoment(at: Date, locale: Locale = DEFAULT_LOCALE): string {
  const time = at.toISOString().slice(11, 16)
  if (locale === 'zh-CN') {
    return `${at.getUTCFullYear()}年${at.getUTCMonth() + 1}月${at.getUTCDate()}日 ${time}（UTC）`
  }
  const date = at.toLocaleDateString('en-GB', {
    day: 'numeric',
    month: 'long',
    year: 'numeric',
    timeZone: 'UTC',
  })
  return `${date} at ${time} UTC`
}

interface Wording {
  subject: string
  why: string
  open: string
  button: string
  ignore: string
}

function wording(locale: Locale, to: string, validForMs: number, requestedAt: Date): Wording {
  const validity = describeDuration(validForMs, locale)
  const moment = describeMoment(requestedAt, locale)
  if (locale === 'zh-CN') {
    return {
      subject: '确认你的大学身份注册',
      why:
        `${moment}，有人登录大学社区小程序后，请求把一个大学账号关联到自己的小程序账号，` +
        `并填写了 ${to} 作为确认地址。`,
      open: '打开下面的链接，用你的大学账号登录，即可完成注册：',
      button: '用我的大学账号确认',
      ignore:
        `链接在 ${validity}内有效。如果这不是你本人的请求，请忽略本邮件：除非你打开链接、` +
        '用大学账号登录并点击“允许”（Allow），否则什么都不会改变。切勿替他人这样做。',
    }
  }
  return {
    subject: 'Confirm your university registration',
    why:
      `On ${moment}, someone signed in to the university community mini-program asked to link ` +
      `a university account to their app account, and gave ${to} as the address to confirm it.`,
    open: 'Open this link to sign in with your university account and finish the registration:',
    button: 'Confirm with my university account',
    ignore:
      `The link is valid for ${validity}. If you did not ask for this, ignore this email: nothing ` +
      'changes unless you open the link, sign in with your university account and press Allow. ' +
      'Never do that for someone else.',
  }
}

function textPart(w: Wording, link: string): string {
  return [w.subject, '', w.why, '', w.open, '', link, '', w.ignore, ''].join('\n')
}

function htmlPart(w: Wording, link: string, locale: Locale): string {
  const href = escapeHtml(link)
  return `<div lang="${locale}">
<h1 style="font-size: 1.2em">${escapeHtml(w.subject)}</h1>
<p>${escapeHtml(w.why)}</p>
<p>${escapeHtml(w.open)}</p>
<p><a href="${href}" style="display: inline-block; padding: 10px 18px; background: #0a58ca; color: #fff; border-radius: 6px; text-decoration: none">${escapeHtml(w.button)}</a></p>
<p style="word-break: break-all; color: #555">${href}</p>
<p>${escapeHtml(w.ignore)}</p>
</div>
`
}

/**
 * The confirmation email of POST /register/university, text and HTML. Against phishing it says
 * what asked for it and when, and that ignoring it changes nothing: a member who did not ask
 * should neither sign in nor press Allow.
 *
 * It is written in both languages, the requester's first (and in the subject): the requester's
 * Accept-Language is the mini-program's guess, and whoever reads the university mailbox must be
 * able to read the warning. Rendered at queue time, so nothing about the language is stored.
 */
export function confirmationEmail(
  to: string,
  link: string,
  validForMs: number,
  requestedAt: Date = new Date(),
  locale: Locale = DEFAULT_LOCALE,
): Mail {
  const locales = [locale, ...otherLocales(locale)]
  const parts = locales.map((each) => ({
    locale: each,
    wording: wording(each, to, validForMs, requestedAt),
  }))
  const text = parts.map((part) => textPart(part.wording, link)).join('\n---\n\n')
  const html = `<!doctype html>
<html lang="${locale}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"></head><body style="font-family: system-ui, -apple-system, 'Segoe UI', Roboto, 'PingFang SC', 'Microsoft YaHei', 'Noto Sans CJK SC', sans-serif; line-height: 1.6; max-width: 36em">
${parts.map((part) => htmlPart(part.wording, link, part.locale)).join('<hr style="border: 0; border-top: 1px solid #ccc; margin: 2em 0">\n')}</body></html>
`
  return { to, subject: parts[0].wording.subject, text, html }
}
