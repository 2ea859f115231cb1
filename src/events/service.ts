import type { Clock } from '../clock.js'
import type { Queryable, WebhookDeliveryState } from '../db/schema.js'
import {
  deliveryStats,
  listEvents,
  resendEvent,
  type DeliveryStats,
  type EventSummary,
} from './outbox.js'

/** The lifecycle events as the operator's commands use them (`campusgate events …`). */
export interface WebhookEvents {
  /** Events newest first, optionally only those in one state. */
  list(options: { state: WebhookDeliveryState | null; limit: number }): Promise<EventSummary[]>
  /**
   * A dead event goes back to pending, same id, with a new WEBHOOK_RETRY_FOR; `not-found` when
   * there is no such event, `not-dead` when it has no dead delivery.
   */
  retry(eventId: string): Promise<'retried' | 'not-found' | 'not-dead'>
  /** A delivered event is sent again, same id; `not-delivered` when no endpoint has it yet. */
  replay(eventId: string): Promise<'replayed' | 'not-found' | 'not-delivered'>
  /** Deliveries pending and dead, and the oldest pending event's age (the metrics' figures). */
  backlog(): Promise<DeliveryStats>
}

export function createWebhookEvents(options: {
  db: Queryable
  clock: Clock
  retryForMs: number
  /** Told after events were made due, so a worker in this process sends them at once. */
  onDue?: () => void
}): WebhookEvents {
  const { db, clock } = options

  async function resend(eventId: string, from: 'dead' | 'delivered') {
    const now = clock.now().getTime()
    const changed = await resendEvent(db, eventId, from, now, now + options.retryForMs)
    if (changed > 0) {
      options.onDue?.()
      return true
    }
    return false
  }

  async function exists(eventId: string): Promise<boolean> {
    return (await listEvents(db, { state: null, limit: 1, eventId })).length > 0
  }

  return {
    list: (query) => listEvents(db, query),
    backlog: () => deliveryStats(db),

    async retry(eventId) {
      if (await resend(eventId, 'dead')) return 'retried'
      return (await exists(eventId)) ? 'not-dead' : 'not-found'
    },

    async replay(eventId) {
      if (await resend(eventId, 'delivered')) return 'replayed'
      return (await exists(eventId)) ? 'not-delivered' : 'not-found'
    },
  }
}
