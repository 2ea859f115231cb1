import type { Clock } from '../clock.js'
import type { Queryable, WebhookDeliveryState } from '../db/schema.js'
import { offsetOf, PAGE_SIZE, type Paged } from '../lib/paging.js'
import {
  endpointBacklogs,
  endpointOf,
  knownEndpoints,
  pageEvents,
  type EndpointBacklog,
  type EventFilter,
  type EventView,
} from './listing.js'
import {
  deliveryStats,
  listEvents,
  resendEvent,
  type DeliveryStats,
  type EventSummary,
} from './outbox.js'

export type { EndpointBacklog, EventFilter, EventView }
export type { EventType } from './types.js'

/** The lifecycle events as the operator's commands and the console use them. */
export interface WebhookEvents {
  /** Events newest first, optionally only those in one state. */
  list(options: { state: WebhookDeliveryState | null; limit: number }): Promise<EventSummary[]>
  /** One page of events with their user and each endpoint's delivery, and the filter's total. */
  page(filter: EventFilter, page: number): Promise<Paged<EventView>>
  /**
   * A dead event goes back to pending, same id, with a new WEBHOOK_RETRY_FOR (at one endpoint,
   * by its key, when given); `not-found` when there is no such event, `not-dead` when it has no
   * dead delivery there.
   */
  retry(eventId: string, endpoint?: string): Promise<'retried' | 'not-found' | 'not-dead'>
  /** A delivered event is sent again, same id; `not-delivered` when no endpoint has it yet. */
  replay(eventId: string, endpoint?: string): Promise<'replayed' | 'not-found' | 'not-delivered'>
  /** Every dead delivery of one endpoint (by its key) goes back to pending; how many. */
  retryAllDead(endpoint: string): Promise<number>
  /** Deliveries pending and dead, and the oldest pending event's age (the metrics' figures). */
  backlog(): Promise<DeliveryStats>
  /** The same per endpoint, for the console's overview. */
  backlogByEndpoint(): Promise<EndpointBacklog[]>
}

export function createWebhookEvents(options: {
  db: Queryable
  clock: Clock
  retryForMs: number
  /** Told after events were made due, so a worker in this process sends them at once. */
  onDue?: () => void
}): WebhookEvents {
  const { db, clock } = options

  /** The endpoint address of a key; null when no delivery names it. */
  async function endpointOfKey(key: string): Promise<string | null> {
    return (await knownEndpoints(db)).find((url) => endpointOf(url).key === key) ?? null
  }

  async function resend(
    which: { eventId: string; endpoint?: string } | { endpoint: string },
    from: 'dead' | 'delivered',
  ): Promise<number> {
    const now = clock.now().getTime()
    const changed = await resendEvent(db, which, from, now, now + options.retryForMs)
    if (changed > 0) options.onDue?.()
    return changed
  }

  /** An event's deliveries in state `from`, at the endpoint of `key` when given, sent again. */
  async function resendOne(eventId: string, key: string | undefined, from: 'dead' | 'delivered') {
    if (key === undefined) return resend({ eventId }, from)
    const endpoint = await endpointOfKey(key)
    return endpoint === null ? 0 : resend({ eventId, endpoint }, from)
  }

  async function exists(eventId: string): Promise<boolean> {
    return (await listEvents(db, { state: null, limit: 1, eventId })).length > 0
  }

  return {
    list: (query) => listEvents(db, query),
    backlog: () => deliveryStats(db),
    backlogByEndpoint: () => endpointBacklogs(db),

    async page(filter, page) {
      return { ...(await pageEvents(db, filter, offsetOf(page), PAGE_SIZE)), page }
    },

    async retry(eventId, endpoint) {
      if ((await resendOne(eventId, endpoint, 'dead')) > 0) return 'retried'
      return (await exists(eventId)) ? 'not-dead' : 'not-found'
    },

    async replay(eventId, endpoint) {
      if ((await resendOne(eventId, endpoint, 'delivered')) > 0) return 'replayed'
      return (await exists(eventId)) ? 'not-delivered' : 'not-found'
    },

    async retryAllDead(key) {
      const endpoint = await endpointOfKey(key)
      return endpoint === null ? 0 : resend({ endpoint }, 'dead')
    },
  }
}
