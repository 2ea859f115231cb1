import { escapeHtml, htmlPage } from '../lib/html.js'
import type { CallbackOutcome, CallbackResult } from './service.js'

const MESSAGES: Readonly<Record<CallbackOutcome | 'neutral', { title: string; body: string }>> = {
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
  ignored: { title: 'Return to the app', body: 'You can close this page and return to the app.' },
  neutral: { title: 'Return to the app', body: 'You can close this page and return to the app.' },
}

/** "Ada Lovelace (ada@ucl.ac.uk)", or whichever of the two the provider gave. */
function accountName(account: CallbackResult['account']): string | null {
  if (account === undefined) return null
  const { name, email } = account
  if (name !== undefined && email !== undefined) return `${name} (${email})`
  return name ?? email ?? null
}

/**
 * The small page a browser sees after the identity provider. It tells the outcome only to the
 * browser that holds the attempt's cookie, and names the university account that signed in, so a
 * member who was lured into confirming someone else's request sees what happened; anyone else
 * learns nothing about the account.
 */
export function callbackPage(result: CallbackResult): string {
  const outcome = result.boundToBrowser ? result.outcome : 'neutral'
  const { title, body } = MESSAGES[outcome]
  const name = outcome === 'linked' || outcome === 'taken' ? accountName(result.account) : null
  const who =
    name === null ? '' : `<p>University account: <strong>${escapeHtml(name)}</strong></p>\n`
  return htmlPage(title, `${who}<p>${body}</p>`)
}
