import { escapeHtml as e } from '../../lib/html.js'
import type { Paged } from '../../lib/paging.js'
import type { AuditEventRow } from '../../db/schema.js'
import type { EventView } from '../../events/service.js'
import type { MailView } from '../../mail/outbox-service.js'
import type { DeviceSession } from '../../sessions/service.js'
import { actionButton, canAct, consolePage, csrfField, href, type PageContext } from '../layout.js'
import type { UserQuery, UserTier } from '../reads.js'
import type { UserRowView } from '../users-list.js'
import { cards, dayTag, langField, notice, pagedList, selectField, timeTag } from '../widgets.js'
import { WORDS } from '../words.js'
import { auditRows, auditHeaders } from './audit.js'
import { eventRows, eventHeaders } from './events.js'

export function userHref(context: PageContext, openId: string): string {
  return href(context, `/console/users/${encodeURIComponent(openId)}`)
}

function queryParams(query: UserQuery): Record<string, string | null> {
  return {
    q: query.search === '' ? null : query.search,
    tier: query.tier,
    sort: query.sort === 'created' ? null : query.sort,
  }
}

/** The list of users, newest first or by last activity, filtered by tier, searched. */
export function usersPage(
  context: PageContext,
  query: UserQuery,
  list: Paged<UserRowView>,
  message: string | null,
): string {
  const words = WORDS[context.locale]
  const w = words.users
  const tiers: UserTier[] = ['none', 'messenger-registered', 'university-registered']
  const form = `<form method="get" action="/console/users" role="search" class="filters">${langField(context)}
<div class="grow"><label for="q">${e(w.search)}</label>
<input type="search" id="q" name="q" value="${e(query.search)}" maxlength="320" autocomplete="off" aria-describedby="q-hint"></div>
${selectField('tier', 'tier', w.tier, [['', w.anyTier], ...tiers.map((tier) => [tier, words.tiers[tier]] as const)], query.tier ?? '')}
${selectField(
  'sort',
  'sort',
  w.sort,
  [
    ['created', w.sortCreated],
    ['active', w.sortActive],
  ],
  query.sort,
)}
<button type="submit">${e(w.button)}</button>
<p id="q-hint" class="muted hint">${e(w.hint)}</p>
</form>`
  const rows = cards(
    [w.openId, w.email, w.tier, w.created, w.lastActive],
    list.rows.map((user) => [
      `<a href="${e(userHref(context, user.openId))}">${e(user.openId)}</a>`,
      e(user.universityEmail ?? '–'),
      `${e(words.tiers[user.tier])}${user.suspended ? ` ${suspendedTag(context)}` : ''}`,
      timeTag(user.createdAt),
      dayTag(user.lastActiveDay, w.never),
    ]),
    w.noMatch,
  )
  const download = `<p><a href="${e(href(context, '/console/users.csv', queryParams(query)))}" download>${e(words.download)}</a></p>`
  const listed = pagedList(
    context,
    list,
    { path: '/console/users', params: queryParams(query), label: w.title },
    rows,
  )
  return consolePage(context, w.title, `${notice(message)}${form}${download}${listed}`, 'users')
}

export interface UserPageData {
  id: string
  openId: string
  createdAt: number
  tier: UserTier
  /** While an operator has suspended the person: since when (epoch ms), and why. */
  suspension: { at: number; reason: string | null } | null
  /** How long a suspension's reason may be (characters). */
  reasonMax: number
  /** Every messenger identity of the person, the first first (docs/identities.md). */
  identities: readonly {
    platform: string
    appId: string | null
    openId: string
    unionId: string | null
  }[]
  university: {
    subject: string | null
    issuer: string | null
    email: string | null
    name: string | null
  } | null
  universityLinkedAt: number | null
  /** Every live session, most recently used first. */
  sessions: readonly DeviceSession[]
  trail: Paged<AuditEventRow>
  events: Paged<EventView>
  /** The mail campusgate sent or meant to send the user: never a body or a link. */
  mail: Paged<MailView>
}

/**
 * One user: tier, university identity, sessions, audit trail and lifecycle events, and the
 * actions, each only where it would change something and only for an admin.
 */
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
<div><dt>${e(w.linkedAt)}</dt><dd>${user.universityLinkedAt === null ? e(w.notLinked) : timeTag(user.universityLinkedAt)}</dd></div>
</dl>`
  const identities = cards(
    [w.platform, w.app, w.openId, w.unionId],
    user.identities.map((one) => [
      e(one.platform),
      one.appId === null ? e(w.appUnknown) : `<code>${e(one.appId)}</code>`,
      `<code>${e(one.openId)}</code>`,
      one.unionId === null ? '–' : `<code>${e(one.unionId)}</code>`,
    ]),
    words.nothing,
  )
  // Each of the page's lists keeps the others' pages in its pager's links.
  const pages = { events: user.events.page, mail: user.mail.page, trail: user.trail.page }
  const others = (list: keyof typeof pages) =>
    Object.fromEntries(
      Object.entries(pages)
        .filter(([name]) => name !== list)
        .map(([name, page]) => [name, page === 1 ? null : String(page)]),
    )
  // A viewer's cards have no action column: nothing would be in it.
  const acts = canAct(context)
  const sessions = cards(
    [w.device, w.created, w.lastUsed, w.expires, ...(acts ? [words.columns.action] : [])],
    user.sessions.map((session) => [
      e(session.device ?? w.unknownDevice),
      timeTag(session.createdAt.getTime()),
      timeTag(session.lastUsedAt.getTime()),
      timeTag(session.expiresAt.getTime()),
      ...(acts ? [actionButton(context, `${base}/revoke`, w.revoke, { session: session.id })] : []),
    ]),
    w.noSessions,
  )
  const actions = !acts
    ? ''
    : `<h2>${e(w.actions)}</h2>
<div class="actions">
${user.sessions.length > 0 ? revokeAllButton(context, base) : ''}
${user.universityLinkedAt !== null ? actionButton(context, `${base}/unlink`, w.unlink) : ''}
</div>
${suspensionForm(context, base, user)}
<form method="post" action="${e(href(context, `${base}/data`))}" class="download">${csrfField(context)}
<p class="muted">${e(w.downloadNote)}</p>
<button type="submit">${e(w.download)}</button>
</form>
<form method="post" action="${e(href(context, `${base}/erase`))}" class="erase">${csrfField(context)}
<p class="muted">${e(w.eraseNote)}</p>
<label for="confirm">${e(w.confirm)}</label>
<input id="confirm" name="confirm" autocomplete="off" required maxlength="256">
<button type="submit" class="danger">${e(w.erase)}</button>
</form>`
  return consolePage(
    context,
    user.openId,
    `${notice(message)}
<dl class="facts">
<div><dt>${e(w.openId)}</dt><dd><code>${e(user.openId)}</code></dd></div>
<div><dt>${e(w.created)}</dt><dd>${timeTag(user.createdAt)}</dd></div>
<div><dt>${e(w.tier)}</dt><dd>${e(words.tiers[user.tier])}${user.suspension === null ? '' : ` ${suspendedTag(context)}`}</dd></div>
${
  user.suspension === null
    ? ''
    : `<div><dt>${e(w.suspendedSince)}</dt><dd>${timeTag(user.suspension.at)} — ${e(user.suspension.reason ?? w.noReason)}</dd></div>`
}
</dl>
<h2>${e(w.identities)}</h2>
${identities}
<h2>${e(w.university)}</h2>
${identity}
<h2>${e(w.sessions)}</h2>
<p class="muted">${e(words.pager.showing(user.sessions.length === 0 ? 0 : 1, user.sessions.length, user.sessions.length))}</p>
${sessions}
${actions}
<h2>${e(w.events)}</h2>
${pagedList(context, user.events, { path: base, param: 'events', params: others('events'), label: w.events }, cards(eventHeaders(context, false), eventRows(context, user.events.rows, null), words.nothing))}
<h2>${e(w.mail)}</h2>
<p class="muted">${e(w.mailNote)}</p>
${pagedList(context, user.mail, { path: base, param: 'mail', params: others('mail'), label: w.mail }, mailHistory(context, user.mail.rows))}
<h2>${e(w.trail)}</h2>
${pagedList(context, user.trail, { path: base, param: 'trail', params: others('trail'), label: w.trail }, cards(auditHeaders(context), auditRows(context, user.trail.rows, new Set(user.identities.map((one) => one.openId))), words.nothing))}`,
    'users',
  )
}

/** The mark of a suspended person, on their page and in the users list. */
function suspendedTag(context: PageContext): string {
  return `<strong class="suspended">${e(WORDS[context.locale].users.suspended)}</strong>`
}

/**
 * "Suspend user" with its labelled reason, or "Restore user" while suspended (docs/console.md,
 * "Suspending a user"); the page draws it for an admin only.
 */
function suspensionForm(
  context: PageContext,
  base: string,
  user: Pick<UserPageData, 'suspension' | 'reasonMax'>,
): string {
  const w = WORDS[context.locale].users
  const back =
    context.here === '' ? '' : `<input type="hidden" name="back" value="${e(context.here)}">`
  if (user.suspension !== null) {
    return `<form method="post" action="${e(href(context, `${base}/restore`))}" class="restore">${csrfField(context)}${back}
<p class="muted">${e(w.restoreNote)}</p>
<button type="submit">${e(w.restore)}</button>
</form>`
  }
  return `<form method="post" action="${e(href(context, `${base}/suspend`))}" class="suspend">${csrfField(context)}${back}
<p class="muted">${e(w.suspendNote)}</p>
<label for="reason">${e(w.suspendReason)}</label>
<input id="reason" name="reason" autocomplete="off" maxlength="${user.reasonMax}">
<button type="submit" class="danger">${e(w.suspend)}</button>
</form>`
}

/** The user's mail, newest first: to whom, its subject, where it stands; never a body or link. */
function mailHistory(context: PageContext, rows: readonly MailView[]): string {
  const words = WORDS[context.locale]
  const c = words.columns
  return cards(
    [c.to, c.subject, c.state, c.at, c.finished, c.tries, c.lastError],
    rows.map((mail) => [
      e(mail.recipient),
      e(mail.subject),
      `<span class="mail-${mail.state}">${e(words.users.mailStates[mail.state])}</span>`,
      timeTag(mail.createdAt),
      timeTag(mail.sentAt ?? mail.abandonedAt),
      String(mail.attempts),
      e(mail.lastError ?? '–'),
    ]),
    words.users.noMail,
  )
}

/**
 * "Revoke all sessions" on a user's page: a GET to the page that asks first (revokeAllPage), with
 * the view to return to.
 */
function revokeAllButton(context: PageContext, base: string): string {
  const w = WORDS[context.locale].users
  return `<form method="get" action="${e(`${base}/revoke-all`)}" class="inline">${langField(context)}<input type="hidden" name="back" value="${e(context.here)}"><button type="submit">${e(w.revokeAll)}</button></form>`
}

/**
 * The question before "Revoke all sessions": what it ends, and that a student at tier 2 loses it
 * until they prove membership again (the university link ends with the last session).
 */
export function revokeAllPage(
  context: PageContext,
  user: { openId: string; sessions: number; linked: boolean; back: string },
): string {
  const w = WORDS[context.locale].users
  const base = `/console/users/${encodeURIComponent(user.openId)}`
  const cancel = user.back === '' ? href(context, base) : user.back
  return consolePage(
    context,
    w.revokeAllTitle,
    `<dl class="facts"><div><dt>${e(w.openId)}</dt><dd><code>${e(user.openId)}</code></dd></div></dl>
<p>${e(w.revokeAllSessions(user.sessions))}</p>
<p class="warning">${e(user.linked ? w.revokeAllTier2 : w.revokeAllTier1)}</p>
<div class="actions">${actionButton(context, `${base}/revoke`, w.revokeAll, { session: 'all', confirmed: 'yes', back: user.back }, 'danger')}
<a class="button secondary" href="${e(cancel)}">${e(w.cancel)}</a></div>`,
    'users',
  )
}
