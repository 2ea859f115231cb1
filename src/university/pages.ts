import { escapeHtml, htmlPage } from '../lib/html.js'
import { otherLocales, type Catalogue, type Locale } from '../lib/locale.js'
import type { CallbackOutcome, CallbackResult } from './callback.js'

type Outcome = CallbackOutcome | 'neutral'
interface Message {
  title: string
  body: string
}

const RETURN: Catalogue<Message> = {
  en: { title: 'Return to the app', body: 'You can close this page and return to the app.' },
  'zh-CN': { title: '返回小程序', body: '你可以关闭此页面，返回小程序。' },
}

const MESSAGES: Catalogue<Readonly<Record<Outcome, Message>>> = {
  en: {
    linked: {
      title: 'University account linked',
      body: 'Your university account is now linked. You can return to the app.',
    },
    denied: {
      title: 'Authorization declined',
      body: 'You declined to share your university account. Nothing was linked. You can return to the app.',
    },
    failed: {
      title: 'Linking failed',
      body: 'The university could not confirm your account. Request a new confirmation email from the app and try again.',
    },
    taken: {
      title: 'Already linked to another account',
      body: 'This university account is already linked to another account of the app, so nothing was linked here. One university account confirms one app account at a time.',
    },
    ignored: RETURN.en,
    neutral: RETURN.en,
  },
  'zh-CN': {
    linked: {
      title: '大学账号已关联',
      body: '你的大学账号已成功关联。现在可以返回小程序了。',
    },
    denied: {
      title: '已拒绝授权',
      body: '你拒绝了分享大学账号，没有关联任何账号。现在可以返回小程序了。',
    },
    failed: {
      title: '关联失败',
      body: '大学未能确认你的账号。请在小程序中重新申请确认邮件后再试。',
    },
    taken: {
      title: '已关联到其他账号',
      body: '这个大学账号已经关联到小程序的另一个账号，因此这里没有关联任何账号。一个大学账号同一时间只能确认一个小程序账号。',
    },
    ignored: RETURN['zh-CN'],
    neutral: RETURN['zh-CN'],
  },
}

const ACCOUNT_LABEL: Catalogue<string> = { en: 'University account:', 'zh-CN': '大学账号：' }

/** "Ada Lovelace (ada@ucl.ac.uk)", or whichever of the two the provider gave. */
function accountName(account: CallbackResult['account']): string | null {
  if (account === undefined) return null
  const { name, email } = account
  if (name !== undefined && email !== undefined) return `${name} (${email})`
  return name ?? email ?? null
}

function pageIn(locale: Locale, outcome: Outcome, name: string | null): Message {
  const { title, body } = MESSAGES[locale][outcome]
  const label = escapeHtml(ACCOUNT_LABEL[locale])
  const who =
    name === null ? '' : `<p class="account">${label} <strong>${escapeHtml(name)}</strong></p>\n`
  return { title, body: `${who}<p>${escapeHtml(body)}</p>` }
}

/**
 * The small page a browser sees after the identity provider. It tells the outcome only to the
 * browser that holds the attempt's cookie, and names the university account that signed in, so a
 * member who was lured into confirming someone else's request sees what happened; anyone else
 * learns nothing about the account. The callback must not run twice, so the other language
 * rides along in the page and the switch shows it without a request.
 */
export function callbackPage(result: CallbackResult, locale: Locale = 'en'): string {
  const outcome = result.boundToBrowser ? result.outcome : 'neutral'
  const name = outcome === 'linked' || outcome === 'taken' ? accountName(result.account) : null
  const page = pageIn(locale, outcome, name)
  const [other] = otherLocales(locale)
  return htmlPage(page.title, page.body, {
    locale,
    ...(other === undefined
      ? {}
      : { inlineAlternate: { locale: other, ...pageIn(other, outcome, name) } }),
  })
}
