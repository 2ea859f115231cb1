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

/** The confirmation email of POST /register/university, text and HTML. */
export function confirmationEmail(to: string, link: string, validForMs: number): Mail {
  const validity = describeDuration(validForMs)
  const text = [
    'Confirm your university registration',
    '',
    'Open this link to sign in with your university account and finish the registration:',
    '',
    link,
    '',
    `The link is valid for ${validity}. If you did not ask for this, ignore this email.`,
    '',
  ].join('\n')
  const href = escapeHtml(link)
  const html = `<!doctype html>
<html><body style="font-family: sans-serif">
<h1 style="font-size: 1.2em">Confirm your university registration</h1>
<p>Open this link to sign in with your university account and finish the registration:</p>
<p><a href="${href}">Confirm with my university account</a></p>
<p style="word-break: break-all; color: #555">${href}</p>
<p>The link is valid for ${validity}. If you did not ask for this, ignore this email.</p>
</body></html>
`
  return { to, subject: 'Confirm your university registration', text, html }
}
