import { escapeHtml } from '../lib/html.js'
import type { Mail } from '../mail/transport.js'

function plural(count: number, unit: string): string {
  return `${count} ${unit}${count === 1 ? '' : 's'}`
}

/** "30 minutes", "2 hours", "1 minute 30 seconds": how long the link works, in words. */
export function describeDuration(ms: number): string {
  const totalSeconds = Math.max(1, Math.floor(ms / 1000))
  const hours = Math.floor(totalSeconds / 3600)
  const minutes = Math.floor((totalSeconds % 3600) / 60)
  const seconds = totalSeconds % 60
  const parts = [
    hours > 0 ? plural(hours, 'hour') : '',
    minutes > 0 ? plural(minutes, 'minute') : '',
    seconds > 0 ? plural(seconds, 'second') : '',
  ]
  return parts.filter((part) => part !== '').join(' ')
}

/** "23 November 2026 at 18:05 UTC": when the email was asked for, unambiguous for any reader. */
export function describeMoment(at: Date): string {
  const date = at.toLocaleDateString('en-GB', {
    day: 'numeric',
    month: 'long',
    year: 'numeric',
    timeZone: 'UTC',
  })
  const time = at.toISOString().slice(11, 16)
  return `${date} at ${time} UTC`
}

/**
 * The confirmation email of POST /register/university, text and HTML. Against phishing it says
 * what asked for it and when, and that ignoring it changes nothing: a member who did not ask
 * should neither sign in nor press Allow.
 */
export function confirmationEmail(
  to: string,
  link: string,
  validForMs: number,
  requestedAt: Date = new Date(),
): Mail {
  const validity = describeDuration(validForMs)
  const moment = describeMoment(requestedAt)
  const why =
    `On ${moment}, someone signed in to the university community mini-program asked to link ` +
    `a university account to their app account, and gave ${to} as the address to confirm it.`
  const ignore =
    `The link is valid for ${validity}. If you did not ask for this, ignore this email: nothing ` +
    'changes unless you open the link, sign in with your university account and press Allow. ' +
    'Never do that for someone else.'
  const text = [
    'Confirm your university registration',
    '',
    why,
    '',
    'Open this link to sign in with your university account and finish the registration:',
    '',
    link,
    '',
    ignore,
    '',
  ].join('\n')
  const href = escapeHtml(link)
  const html = `<!doctype html>
<html><body style="font-family: sans-serif">
<h1 style="font-size: 1.2em">Confirm your university registration</h1>
<p>${escapeHtml(why)}</p>
<p>Open this link to sign in with your university account and finish the registration:</p>
<p><a href="${href}">Confirm with my university account</a></p>
<p style="word-break: break-all; color: #555">${href}</p>
<p>${escapeHtml(ignore)}</p>
</body></html>
`
  return { to, subject: 'Confirm your university registration', text, html }
}
