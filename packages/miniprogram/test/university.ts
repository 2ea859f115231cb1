// What the user does outside the mini-program to reach tier 2: opens the emailed link and signs in
// at campusgate's sandbox university, in a browser.
import assert from 'node:assert/strict'
import type { RunningService } from '../../../test/helpers/service.js'
import { linkIn, type SmtpSink } from '../../../test/helpers/smtp-sink.js'

/** Opens the confirmation link mailed to `email` and allows the sign-in as `openId`'s own member. */
export async function confirmByEmail(
  service: RunningService,
  smtp: SmtpSink,
  openId: string,
  email: string,
): Promise<void> {
  const mail = await smtp.waitFor((m) => JSON.stringify(m.to).includes(email))
  const opened = await fetch(linkIn(mail), {
    redirect: 'manual',
    headers: { accept: 'text/html' },
  })
  await opened.arrayBuffer()
  assert.equal(opened.status, 301)
  const cookie = (opened.headers.get('set-cookie') ?? '').split(';')[0]
  const decided = await fetch(`${service.url}/_sandbox/university/authorise/decision`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      client_id: service.config.university.clientId,
      state: openId,
      decision: 'allow',
      member: 'own',
    }).toString(),
  })
  await decided.arrayBuffer()
  assert.equal(decided.status, 302)
  const callback = await fetch(decided.headers.get('location')!, {
    headers: { accept: 'text/html', cookie },
  })
  assert.match(await callback.text(), /linked/i)
}
