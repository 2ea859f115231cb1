import type { WebhookDeliveryState } from '../../db/schema.js'
import type { EndpointBacklog, EventType, EventView } from '../../events/service.js'
import { escapeHtml as e } from '../../lib/html.js'
import type { Paged } from '../../lib/paging.js'
import { actionButton, canAct, consolePage, href, type PageContext } from '../layout.js'
import { cards, langField, notice, pager, selectField, timeTag } from '../widgets.js'
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

export function eventRows(
  context: PageContext,
  events: readonly EventView[],
  withUser: boolean,
): string[][] {
  const words = WORDS[context.locale]
  return events.map((event) => [
    `${typeOf(context, event.type)}<br><code class="id">${e(event.id)}</code>`,
    ...(withUser
      ? [
          event.openId === ''
            ? e(words.events.erased)
            : `<a href="${e(href(context, `/console/users/${encodeURIComponent(event.openId)}`))}">${e(event.openId)}</a>`,
        ]
      : []),
    timeTag(event.createdAt),
    deliveries(context, event, withUser),
  ])
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
  const paging = pager(context, list, {
    path: '/console/events',
    params: { state: query.state, endpoint: query.endpoint },
    label: w.title,
  })
  return consolePage(
    context,
    w.title,
    `${notice(message)}${form}${retryAll}${paging}${cards(eventHeaders(context, true), eventRows(context, list.rows, true), words.nothing)}`,
    'events',
  )
}
