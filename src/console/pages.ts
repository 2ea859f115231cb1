import type { AuditEventRow } from '../db/schema.js'
import { escapeHtml } from '../lib/html.js'
import type { DeviceSession, Tier } from '../sessions/service.js'
import { barChart, shareRing } from './charts.js'
import { actionButton, consolePage, csrfField, type PageContext } from './layout.js'
import type { Backlog, DailySeries, Figures, FoundUser, UserEvent } from './reads.js'
import { WORDS } from './words.js'

const e = escapeHtml

function iso(ms: number | null | undefined): string {
  return ms === null || ms === undefined ? '–' : new Date(ms).toISOString().replace('.000Z', 'Z')
}

/** `3 h 12 min`: how long ago, for backlogs and backups. */
export function age(ms: number): string {
  const minutes = Math.max(0, Math.floor(ms / 60_000))
  if (minutes < 60) return `${minutes} min`
  const hours = Math.floor(minutes / 60)
  if (hours < 48) return `${hours} h ${minutes % 60} min`
  return `${Math.floor(hours / 24)} d ${hours % 24} h`
}

function notice(text: string | null): string {
  return text === null ? '' : `<p class="notice" role="status">${e(text)}</p>`
}

function table(headers: string[], rows: string[][], empty: string): string {
  if (rows.length === 0) return `<p class="muted">${e(empty)}</p>`
  return `<div class="scroll" tabindex="0"><table><thead><tr>${headers.map((h) => `<th scope="col">${e(h)}</th>`).join('')}</tr></thead><tbody>${rows
    .map((cells) => `<tr>${cells.map((cell) => `<td>${cell}</td>`).join('')}</tr>`)
    .join('')}</tbody></table></div>`
}

export function signInPage(context: PageContext, offerUniversity: boolean): string {
  const words = WORDS[context.locale].signIn
  const university = offerUniversity
    ? `<p><a class="button" href="/console/sign-in/university">${e(words.university)}</a></p>`
    : ''
  return consolePage(
    context,
    words.title,
    `<p>${e(words.lead)}</p>
<form method="post" action="/console/sign-in" id="sign-in" class="hidden-until-token">
<input type="hidden" name="token" id="token" value="">
<button type="submit">${e(words.button)}</button>
</form>
<p>${e(words.getLink)}</p>
<pre><code>campusgate console link --name YOUR-NAME</code></pre>
${university}`,
    null,
  )
}

export function invalidLinkPage(context: PageContext): string {
  const words = WORDS[context.locale].signIn
  return consolePage(
    context,
    words.invalidTitle,
    `<p>${e(words.invalid)}</p><pre><code>campusgate console link --name YOUR-NAME</code></pre>`,
    null,
  )
}

export function notFoundPage(context: PageContext): string {
  const words = WORDS[context.locale]
  return consolePage(context, words.notFoundTitle, `<p>${e(words.notFound)}</p>`, null)
}

export function csrfPage(context: PageContext): string {
  const words = WORDS[context.locale]
  return consolePage(context, words.csrfTitle, `<p>${e(words.csrf)}</p>`, null)
}

export interface OverviewData {
  figures: Figures
  activeUsers: DailySeries
  now: number
  newestBackupAt: number | null
  /** The webhook deliveries' backlog, as the events service reads it for the metrics too. */
  webhooks: Backlog
  backupsOn: boolean
  ready: boolean
}

function backlog(
  label: string,
  words: (typeof WORDS)['en']['overview'],
  figures: Backlog,
  now: number,
): string {
  return `<section class="card"><h2>${e(label)}</h2><dl class="figures">
<div><dt>${e(words.pending)}</dt><dd>${figures.pending}</dd></div>
<div><dt>${e(words.dead)}</dt><dd${figures.dead > 0 ? ' class="bad"' : ''}>${figures.dead}</dd></div>
<div><dt>${e(words.oldest)}</dt><dd>${figures.oldestPendingAt === null ? '–' : e(age(now - figures.oldestPendingAt))}</dd></div>
</dl></section>`
}

export function overviewPage(context: PageContext, data: OverviewData): string {
  const words = WORDS[context.locale].overview
  const { figures, now } = data
  const backup = !data.backupsOn
    ? words.noBackups
    : data.newestBackupAt === null
      ? words.none
      : age(now - data.newestBackupAt)
  return consolePage(
    context,
    words.title,
    `<div class="grid">
<section class="card"><h2>${e(words.newUsers)}</h2><p class="muted">${e(words.perDay)}</p>${barChart(words.newUsers, figures.newUsers)}</section>
<section class="card"><h2>${e(words.links)}</h2><p class="muted">${e(words.perDay)}</p>${barChart(words.links, figures.links)}</section>
<section class="card"><h2>${e(words.active)}</h2><p class="muted">${e(words.activeNote)}</p>${barChart(words.active, data.activeUsers)}</section>
<section class="card"><h2>${e(words.liveSessions)}</h2><p class="big">${figures.liveSessions}</p>${shareRing(words.tier2Share, figures.tier2Sessions, figures.liveSessions)}</section>
${backlog(words.webhooks, words, data.webhooks, now)}
${backlog(words.mail, words, figures.mail, now)}
<section class="card"><h2>${e(words.backup)}</h2><p class="big-text">${e(backup)}</p></section>
<section class="card"><h2>${e(words.readiness)}</h2><p class="big-text ${data.ready ? 'good' : 'bad'}">${e(data.ready ? words.ready : words.notReady)}</p></section>
</div>`,
    'overview',
  )
}

function searchForm(context: PageContext, query: string): string {
  const words = WORDS[context.locale].users
  const lang =
    context.locale === 'en' ? '' : `<input type="hidden" name="lang" value="${context.locale}">`
  return `<form method="get" action="/console/users" role="search" class="search">${lang}
<label for="q">${e(words.search)}</label>
<input type="search" id="q" name="q" value="${e(query)}" maxlength="320" autocomplete="off" aria-describedby="q-hint">
<button type="submit">${e(words.button)}</button>
<p id="q-hint" class="muted">${e(words.hint)}</p>
</form>`
}

function userHref(context: PageContext, openId: string): string {
  const lang = context.locale === 'en' ? '' : `?lang=${context.locale}`
  return `/console/users/${encodeURIComponent(openId)}${lang}`
}

export function usersPage(
  context: PageContext,
  query: string,
  found: FoundUser[] | null,
  message: string | null,
): string {
  const words = WORDS[context.locale]
  const results =
    found === null
      ? ''
      : table(
          [words.users.openId, words.users.email, words.users.created],
          found.map((user) => [
            `<a href="${e(userHref(context, user.openId))}">${e(user.openId)}</a>`,
            e(user.universityEmail ?? '–'),
            e(iso(user.createdAt)),
          ]),
          words.users.noMatch,
        )
  return consolePage(
    context,
    words.users.title,
    `${notice(message)}${searchForm(context, query)}${results}`,
    'users',
  )
}

export interface UserPageData {
  id: string
  openId: string
  createdAt: number
  /** The tier the user's keys have now; null without a live session. */
  tier: Tier | null
  /** Every live session, most recently used first. */
  sessions: DeviceSession[]
  university: {
    subject: string | null
    issuer: string | null
    email: string | null
    name: string | null
  } | null
  universityLinkedAt: number | null
  trail: AuditEventRow[]
  events: UserEvent[]
}

function auditRows(rows: AuditEventRow[]): string[][] {
  return rows.map((row) => [
    e(iso(Number(row.at))),
    e(row.type),
    e(row.actor),
    e(row.open_id ?? '–'),
    `<code>${e(row.detail ?? '')}</code>`,
  ])
}

export function userPage(context: PageContext, user: UserPageData, message: string | null): string {
  const words = WORDS[context.locale]
  const w = words.users
  const base = `/console/users/${encodeURIComponent(user.openId)}`
  const identity =
    user.university === null
      ? `<p>${e(w.notLinked)}</p>`
      : `<dl class="facts">
<div><dt>${e(w.subject)}</dt><dd>${e(user.university.subject ?? '–')}</dd></div>
<div><dt>${e(w.email)}</dt><dd>${e(user.university.email ?? '–')}</dd></div>
<div><dt>${e(w.name)}</dt><dd>${e(user.university.name ?? '–')}</dd></div>
<div><dt>${e(w.linkedAt)}</dt><dd>${user.universityLinkedAt === null ? e(w.notLinked) : e(iso(user.universityLinkedAt))}</dd></div>
</dl>`
  const c = words.columns
  const sessions = table(
    [w.device, w.created, w.lastUsed, w.expires, c.action],
    user.sessions.map((session) => [
      e(session.device ?? w.unknownDevice),
      e(iso(session.createdAt.getTime())),
      e(iso(session.lastUsedAt.getTime())),
      e(iso(session.expiresAt.getTime())),
      actionButton(context, `${base}/revoke`, w.revoke, { session: session.id }),
    ]),
    w.noSession,
  )
  return consolePage(
    context,
    user.openId,
    `${notice(message)}
<dl class="facts">
<div><dt>${e(w.openId)}</dt><dd><code>${e(user.openId)}</code></dd></div>
<div><dt>${e(w.created)}</dt><dd>${e(iso(user.createdAt))}</dd></div>
<div><dt>${e(w.tier)}</dt><dd>${e(user.tier ?? w.none)}</dd></div>
</dl>
<h2>${e(w.sessions)}</h2>
${sessions}
<h2>${e(w.university)}</h2>
${identity}
<h2>${e(w.actions)}</h2>
<div class="actions">
${user.sessions.length === 0 ? '' : actionButton(context, `${base}/revoke`, w.revokeAll, { session: 'all' })}
${actionButton(context, `${base}/unlink`, w.unlink)}
</div>
<form method="post" action="${e(base)}/erase" class="erase">${csrfField(context)}
<p class="muted">${e(w.eraseNote)}</p>
<label for="confirm">${e(w.confirm)}</label>
<input id="confirm" name="confirm" autocomplete="off" required maxlength="256">
<button type="submit" class="danger">${e(w.erase)}</button>
</form>
<h2>${e(w.events)}</h2>
${table(
  [c.id, c.type, c.state, c.at],
  user.events.map((event) => [
    `<code>${e(event.id)}</code>`,
    e(event.type),
    e(words.events.state[event.state]),
    e(iso(event.createdAt)),
  ]),
  words.nothing,
)}
<h2>${e(w.trail)}</h2>
${table([c.at, c.type, c.actor, c.user, c.detail], auditRows(user.trail), words.nothing)}`,
    'users',
  )
}

export interface EventRow {
  id: string
  type: string
  userId: string
  createdAt: number
  tries: number
  lastError: string | null
}

export type EventState = 'pending' | 'dead' | 'delivered'

function tabs(
  context: PageContext,
  base: string,
  states: readonly string[],
  names: Record<string, string>,
  current: string,
): string {
  const lang = context.locale === 'en' ? '' : `&lang=${context.locale}`
  return `<nav class="tabs" aria-label="${e(WORDS[context.locale].columns.state)}"><ul>${states
    .map(
      (state) =>
        `<li><a href="${base}?state=${state}${lang}"${state === current ? ' aria-current="page"' : ''}>${e(names[state] ?? state)}</a></li>`,
    )
    .join('')}</ul></nav>`
}

export function eventsPage(
  context: PageContext,
  state: EventState,
  events: EventRow[],
  message: string | null,
): string {
  const words = WORDS[context.locale]
  const c = words.columns
  const action = (event: EventRow): string =>
    state === 'dead'
      ? actionButton(
          context,
          `/console/events/${encodeURIComponent(event.id)}/retry`,
          words.events.retry,
        )
      : state === 'delivered'
        ? actionButton(
            context,
            `/console/events/${encodeURIComponent(event.id)}/replay`,
            words.events.replay,
          )
        : ''
  return consolePage(
    context,
    words.events.title,
    `${notice(message)}${tabs(context, '/console/events', ['pending', 'dead', 'delivered'], words.events.state, state)}
${table(
  [c.id, c.type, c.at, c.tries, c.lastError, c.action],
  events.map((event) => [
    `<code>${e(event.id)}</code>`,
    e(event.type),
    e(iso(event.createdAt)),
    String(event.tries),
    e(event.lastError ?? '–'),
    action(event),
  ]),
  words.nothing,
)}`,
    'events',
  )
}

export interface MailRow {
  id: string
  recipient: string
  createdAt: number
  attempts: number
  lastError: string | null
}

/** `s***@example.edu`: enough to recognise a recipient, not to harvest addresses. */
function maskAddress(address: string): string {
  const at = address.lastIndexOf('@')
  return at <= 0 ? '***' : `${address[0]}***${address.slice(at)}`
}

export function mailPage(
  context: PageContext,
  state: 'pending' | 'dead',
  mails: MailRow[],
  message: string | null,
): string {
  const words = WORDS[context.locale]
  const c = words.columns
  return consolePage(
    context,
    words.mail.title,
    `${notice(message)}${tabs(context, '/console/mail', ['pending', 'dead'], words.mail.state, state)}
${table(
  [c.id, c.to, c.at, c.tries, c.lastError, c.action],
  mails.map((mail) => [
    `<code>${e(mail.id)}</code>`,
    e(maskAddress(mail.recipient)),
    e(iso(mail.createdAt)),
    String(mail.attempts),
    e(mail.lastError ?? '–'),
    state === 'pending'
      ? actionButton(
          context,
          `/console/mail/${encodeURIComponent(mail.id)}/retry`,
          words.mail.retry,
        )
      : '',
  ]),
  words.nothing,
)}`,
    'mail',
  )
}

export function auditPage(
  context: PageContext,
  filter: { openId: string; type: string; since: string; until: string },
  types: readonly string[],
  rows: AuditEventRow[],
): string {
  const words = WORDS[context.locale]
  const w = words.audit
  const c = words.columns
  const options = ['', ...types]
    .map(
      (type) =>
        `<option value="${e(type)}"${type === filter.type ? ' selected' : ''}>${e(type === '' ? '–' : type)}</option>`,
    )
    .join('')
  const lang =
    context.locale === 'en' ? '' : `<input type="hidden" name="lang" value="${context.locale}">`
  return consolePage(
    context,
    w.title,
    `<form method="get" action="/console/audit" class="filters">${lang}
<div><label for="open-id">${e(w.user)}</label><input id="open-id" name="openId" value="${e(filter.openId)}" maxlength="256"></div>
<div><label for="type">${e(w.type)}</label><select id="type" name="type">${options}</select></div>
<div><label for="since">${e(w.since)}</label><input id="since" name="since" type="date" value="${e(filter.since)}"></div>
<div><label for="until">${e(w.until)}</label><input id="until" name="until" type="date" value="${e(filter.until)}"></div>
<button type="submit">${e(w.filter)}</button>
</form>
${table([c.at, c.type, c.actor, c.user, c.detail], auditRows(rows), words.nothing)}`,
    'audit',
  )
}

export function refusedPage(context: PageContext): string {
  const words = WORDS[context.locale].signIn
  return consolePage(context, words.refusedTitle, `<p>${e(words.refused)}</p>`, null)
}

/**
 * After the provider's redirect: the console cookie is SameSite=Strict, so a redirect chain that
 * began on the provider's site would arrive without it. This page, on our own site, moves on.
 */
export function continuePage(context: PageContext): string {
  const words = WORDS[context.locale].signIn
  return consolePage(
    context,
    words.continueTitle,
    `<p><a class="button" href="/console" id="continue">${e(words.continue)}</a></p>`,
    null,
  ).replace('<head>', '<head><meta http-equiv="refresh" content="0;url=/console">')
}
