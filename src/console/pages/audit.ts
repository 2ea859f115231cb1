import { AUDIT_EVENT_TYPES, isAuditEventType } from '../../audit/audit.js'
import type { AuditEventRow } from '../../db/schema.js'
import { escapeHtml as e } from '../../lib/html.js'
import type { Paged } from '../../lib/paging.js'
import { consolePage, href, type PageContext } from '../layout.js'
import { userCell } from './events.js'
import { cards, detailFields, langField, pagedList, selectField, timeTag } from '../widgets.js'
import { WORDS } from '../words.js'

export function auditHeaders(context: PageContext): string[] {
  const c = WORDS[context.locale].columns
  return [c.at, c.type, c.actor, c.user, c.ip, c.detail]
}

/** The rows of the trail; `existing`: the openIds that still name a user (the others are erased). */
export function auditRows(
  context: PageContext,
  rows: readonly AuditEventRow[],
  existing: ReadonlySet<string>,
): string[][] {
  const words = WORDS[context.locale]
  return rows.map((row) => [
    timeTag(Number(row.at)),
    `${e(isAuditEventType(row.type) ? words.auditTypes[row.type] : row.type)}<br><code>${e(row.type)}</code>`,
    e(row.actor),
    row.open_id === null ? '–' : userCell(context, row.open_id, existing),
    e(row.ip ?? '–'),
    detailFields(row.detail),
  ])
}

/** The filter as typed: what the form shows back and the pager carries on. */
export interface AuditForm {
  openId: string
  type: string
  actor: string
  ip: string
  since: string
  until: string
}

export function auditPage(
  context: PageContext,
  filter: AuditForm,
  list: Paged<AuditEventRow>,
  existing: ReadonlySet<string>,
): string {
  const words = WORDS[context.locale]
  const w = words.audit
  const types = AUDIT_EVENT_TYPES.map((type) => [type, words.auditTypes[type]] as const)
  const input = (id: string, name: keyof AuditForm, label: string, type = 'text') =>
    `<div><label for="${id}">${e(label)}</label><input id="${id}" name="${name}" type="${type}" value="${e(filter[name])}" maxlength="256"></div>`
  const form = `<form method="get" action="/console/audit" class="filters">${langField(context)}
${input('open-id', 'openId', w.user)}
${selectField('type', 'type', w.type, [['', w.anyType], ...types], filter.type)}
${input('actor', 'actor', w.actor)}
${input('ip', 'ip', w.ip)}
${input('since', 'since', w.since, 'date')}
${input('until', 'until', w.until, 'date')}
<button type="submit">${e(w.filter)}</button>
</form>`
  const params = Object.fromEntries(
    Object.entries(filter).map(([name, value]) => [name, value === '' ? null : value]),
  )
  const download = `<p><a href="${e(href(context, '/console/audit.csv', params))}" download>${e(words.download)}</a></p>`
  const listed = pagedList(
    context,
    list,
    { path: '/console/audit', params, label: w.title },
    cards(auditHeaders(context), auditRows(context, list.rows, existing), words.nothing),
  )
  return consolePage(context, w.title, `${form}${download}${listed}`, 'audit')
}
