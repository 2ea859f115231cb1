import type { WebhookDeliveryState } from '../../db/schema.js'
import type { EndpointBacklog, EventType, EventView } from '../../events/service.js'
import { escapeHtml as e } from '../../lib/html.js'
import type { Paged } from '../../lib/paging.js'
import { actionButton, canAct, consolePage, href, type PageContext } from '../layout.js'
import { cards, langField, notice, pagedList, selectField, timeTag } from '../widgets.js'
import { WORDS } from '../words.js'

const STATES: readonly WebhookDeliveryState[] = ['pending', 'dead', 'delivered']

function typeOf(context: PageContext, type: string): string {
  const names = WORDS[context.locale].eventTypes
  const name = Object.hasOwn(names, type) ? names[type as EventType] : type
  return `${e(name)}<br><code>${e(type)}</code>`
}

/** Each endpoint's delivery of the event: its state, tries and last error, and its action. */
function deliveries(context: PageContext, event: EventView, actions: boolean): string {
  const words = WORDS[context.locale]
  const items = event.deliveries.map((delivery) => {
    const path = `/console/events/${encodeURIComponent(event.id)}`
    const action = !actions
      ? ''
      : delivery.state === 'dead'
        ? actionButton(context, `${path}/retry`, words.events.retry, { endpoint: delivery.key })
        : delivery.state === 'delivered'
          ? actionButton(context, `${path}/replay`, words.events.replay, {
              endpoint: delivery.key,
            })
          : ''
    const error =
      delivery.lastError === null ? '' : `<br><span class="muted">${e(delivery.lastError)}</span>`
    return `<li><code>${e(delivery.label)}</code>: <span class="state-${delivery.state}">${e(words.deliveryStates[delivery.state])}</span> · ${e(words.columns.tries)} ${delivery.attempts}${error} ${action}</li>`
  })
  return items.length === 0 ? '–' : `<ul class="deliveries">${items.join('')}</ul>`
}

export function eventHeaders(context: PageContext, withUser: boolean): string[] {
  const words = WORDS[context.locale]
  return [
    words.events.event,
    ...(withUser ? [words.events.user] : []),
    words.columns.at,
    words.events.deliveries,
  ]
}

/**
 * The rows of events; with `existing` (the openIds that still name a user), the user column:
 * a link to the user's page, or the openId marked erased, never a link to a page that is gone.
 */
export function eventRows(
  context: PageContext,
  events: readonly EventView[],
  existing: ReadonlySet<string> | null,
): string[][] {
  return events.map((event) => [
    `${typeOf(context, event.type)}<br><code class="id">${e(event.id)}</code>`,
    ...(existing === null
      ? []
      : [userCell(context, event.openId === '' ? null : event.openId, existing)]),
    timeTag(event.createdAt),
    deliveries(context, event, existing !== null),
  ])
}

/**
 * A user named in a list: a link to its page while it exists; an erased one's openId as text,
 * marked "erased" (docs/console.md, "What each page shows").
 */
export function userCell(
  context: PageContext,
  openId: string | null,
  existing: ReadonlySet<string>,
): string {
  const words = WORDS[context.locale]
  if (openId === null) return e(words.events.erased)
  if (!existing.has(openId)) {
    return `<span class="erased"><code>${e(openId)}</code> <span class="muted">(${e(words.events.erased)})</span></span>`
  }
  return `<a href="${e(href(context, `/console/users/${encodeURIComponent(openId)}`))}">${e(openId)}</a>`
}

export interface EventsQuery {
  state: WebhookDeliveryState
  endpoint: string | null
}

/** Events by the state of their delivery at one endpoint or any, with Retry, Replay, Retry all. */
export function eventsPage(
  context: PageContext,
  query: EventsQuery,
  endpoints: readonly EndpointBacklog[],
  list: Paged<EventView>,
  existing: ReadonlySet<string>,
  message: string | null,
): string {
  const words = WORDS[context.locale]
  const w = words.events
  const form = `<form method="get" action="/console/events" class="filters">${langField(context)}
${selectField(
  'state',
  'state',
  words.columns.state,
  STATES.map((state) => [state, words.deliveryStates[state]] as const),
  query.state,
)}
${selectField('endpoint', 'endpoint', w.endpoint, [['', w.anyEndpoint], ...endpoints.map((endpoint) => [endpoint.key, endpoint.label] as const)], query.endpoint ?? '')}
<button type="submit">${e(w.show)}</button>
</form>`
  const retryAll =
    query.state !== 'dead' || !canAct(context)
      ? ''
      : endpoints
          .filter((endpoint) => endpoint.dead > 0)
          .filter((endpoint) => query.endpoint === null || endpoint.key === query.endpoint)
          .map(
            (endpoint) =>
              `<div class="retry-all"><span>${e(w.retryAllNote(endpoint.label, endpoint.dead))}</span> ${actionButton(context, '/console/events/retry-all', w.retryAll, { endpoint: endpoint.key })}</div>`,
          )
          .join('')
  const listed = pagedList(
    context,
    list,
    {
      path: '/console/events',
      params: { state: query.state, endpoint: query.endpoint },
      label: w.title,
    },
    cards(eventHeaders(context, true), eventRows(context, list.rows, existing), words.nothing),
  )
  return consolePage(context, w.title, `${notice(message)}${form}${retryAll}${listed}`, 'events')
}
