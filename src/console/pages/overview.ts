import type { EndpointBacklog } from '../../events/service.js'
import { escapeHtml as e } from '../../lib/html.js'
import { barChart, shareRing } from '../charts.js'
import { consolePage, type PageContext } from '../layout.js'
import type { DailySeries, Figures } from '../reads.js'
import { cards } from '../widgets.js'
import { WORDS } from '../words.js'

export interface OverviewData {
  figures: Figures
  activeUsers: DailySeries
  now: number
  newestBackupAt: number | null
  /** The webhook deliveries' backlog per endpoint. */
  webhooks: EndpointBacklog[]
  backupsOn: boolean
  ready: boolean
}

/** Each figure says what it counts: a 30-day total over a per-day series, a count now. */
export function overviewPage(context: PageContext, data: OverviewData): string {
  const words = WORDS[context.locale]
  const w = words.overview
  const { figures, now } = data
  const age = (at: number | null) => (at === null ? '–' : e(words.age(now - at)))
  const backup = !data.backupsOn
    ? w.noBackups
    : data.newestBackupAt === null
      ? w.none
      : words.age(now - data.newestBackupAt)
  const chart = (title: string, note: string, series: DailySeries) =>
    `<section class="card"><h2>${e(title)}</h2><p class="muted">${e(note)}</p>${barChart(title, w.total30, series)}</section>`
  const webhooks =
    data.webhooks.length === 0
      ? `<p class="muted">${e(w.noEndpoints)}</p>`
      : cards(
          [w.endpoint, w.pending, w.dead, w.oldest],
          data.webhooks.map((endpoint) => [
            `<code>${e(endpoint.label)}</code>`,
            String(endpoint.pending),
            endpoint.dead > 0 ? `<span class="bad">${endpoint.dead}</span>` : '0',
            age(endpoint.oldestPendingAt),
          ]),
          words.nothing,
        )
  const mail = figures.mail
  return consolePage(
    context,
    w.title,
    `<div class="grid">
<section class="card"><h2>${e(w.users)}</h2><p class="big">${figures.users}</p><p class="muted">${e(w.usersNote)}</p></section>
${chart(w.newUsers, w.perDay, figures.newUsers)}
${chart(w.links, w.perDay, figures.links)}
${chart(w.active, w.activeNote, data.activeUsers)}
<section class="card"><h2>${e(w.liveSessions)}</h2><p class="big">${figures.liveSessions}</p><p class="muted">${e(w.liveNote)}</p>${shareRing(w.tier2Share, figures.tier2Sessions, figures.liveSessions)}</section>
<section class="card wide"><h2>${e(w.webhooks)}</h2><p class="muted">${e(w.webhooksNote)}</p>${webhooks}</section>
<section class="card"><h2>${e(w.mail)}</h2><p class="muted">${e(w.mailNote)}</p><dl class="figures">
<div><dt>${e(w.pending)}</dt><dd>${mail.pending}</dd></div>
<div><dt>${e(w.dead)}</dt><dd${mail.dead > 0 ? ' class="bad"' : ''}>${mail.dead}</dd></div>
<div><dt>${e(w.oldest)}</dt><dd>${age(mail.oldestPendingAt)}</dd></div>
</dl></section>
<section class="card"><h2>${e(w.backup)}</h2><p class="big-text">${e(backup)}</p></section>
<section class="card"><h2>${e(w.readiness)}</h2><p class="big-text ${data.ready ? 'good' : 'bad'}">${e(data.ready ? w.ready : w.notReady)}</p></section>
</div>`,
    'overview',
  )
}
