import { htmlPage } from '../lib/html.js'
import type { CallbackOutcome } from './service.js'

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
  ignored: { title: 'Return to the app', body: 'You can close this page and return to the app.' },
  neutral: { title: 'Return to the app', body: 'You can close this page and return to the app.' },
}

/**
 * The small page a browser sees after the identity provider. It tells the outcome only to the
 * browser that holds the attempt's cookie; anyone else learns nothing about the account.
 */
export function callbackPage(outcome: CallbackOutcome, boundToBrowser: boolean): string {
  const { title, body } = MESSAGES[boundToBrowser ? outcome : 'neutral']
  return htmlPage(title, `<p>${body}</p>`)
}
