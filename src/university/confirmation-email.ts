import type { Mail } from '../mail/transport.js'

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

/** The confirmation email of POST /register/university, text and HTML. */
export function confirmationEmail(to: string, link: string, validMinutes: number): Mail {
  const validity = validMinutes === 1 ? '1 minute' : `${validMinutes} minutes`
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
