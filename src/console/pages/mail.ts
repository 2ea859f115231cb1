import { escapeHtml as e } from '../../lib/html.js'
import type { Paged } from '../../lib/paging.js'
import type { MailView } from '../../mail/outbox-service.js'
import { actionButton, canAct, consolePage, href, type PageContext } from '../layout.js'
import { cards, notice, pagedList, timeTag } from '../widgets.js'
import { WORDS } from '../words.js'

/** `s***@example.edu`: enough to recognise a recipient, not to harvest addresses. */
function maskAddress(address: string): string {
  const at = address.lastIndexOf('@')
  return at <= 0 ? '***' : `${address[0]}***${address.slice(at)}`
}

export type MailTab = 'pending' | 'dead'

function tabs(context: PageContext, current: MailTab): string {
  const words = WORDS[context.locale]
  const items = (['pending', 'dead'] as const).map(
    (state) =>
      `<li><a href="${e(href(context, '/console/mail', { state: state === 'pending' ? null : state }))}"${state === current ? ' aria-current="page"' : ''}>${e(words.mail.state[state])}</a></li>`,
  )
  return `<nav class="tabs" aria-label="${e(words.columns.state)}"><ul>${items.join('')}</ul></nav>`
}

/**
 * Queued (pending) and abandoned (dead) confirmation mail, never a body; Retry on a queued mail
 * whose link has not expired.
 */
export function mailPage(
  context: PageContext,
  state: MailTab,
  list: Paged<MailView>,
  now: number,
  message: string | null,
): string {
  const words = WORDS[context.locale]
  const c = words.columns
  // A viewer's cards have no action column: nothing would be in it.
  const acts = canAct(context)
  const rows = list.rows.map((mail) => [
    `<code class="id">${e(mail.id)}</code>`,
    e(maskAddress(mail.recipient)),
    timeTag(mail.createdAt),
    mail.expiresAt <= now && state === 'pending'
      ? `${timeTag(mail.expiresAt)}<br><span class="muted">${e(words.mail.expired)}</span>`
      : timeTag(mail.expiresAt),
    String(mail.attempts),
    e(mail.lastError ?? '–'),
    state === 'pending' && mail.expiresAt > now
      ? actionButton(
          context,
          `/console/mail/${encodeURIComponent(mail.id)}/retry`,
          words.mail.retry,
        )
      : '',
  ])
  return consolePage(
    context,
    words.mail.title,
    `${notice(message)}${tabs(context, state)}${pagedList(
      context,
      list,
      {
        path: '/console/mail',
        params: { state: state === 'pending' ? null : state },
        label: words.mail.title,
      },
      cards(
        [c.id, c.to, c.at, c.expires, c.tries, c.lastError, ...(acts ? [c.action] : [])],
        rows,
        words.nothing,
      ),
    )}`,
    'mail',
  )
}
