import { randomBytes } from 'node:crypto'
import type { Queryable } from '../db/schema.js'
import { insertEvent, nextEventSeq } from './outbox.js'
import { eventBody, type EventUser, type LifecycleEvent } from './types.js'

/**
 * Where the lifecycle functions write their events: in the caller's transaction, so an event
 * exists exactly when its change does ("no event without its change, no change without its event").
 * The unit of work (`accounts/changes.ts`) wakes the delivery worker after the commit.
 */
export interface Events {
  /** False when WEBHOOK_URL is unset: nothing is written, and callers skip what only events need. */
  readonly enabled: boolean
  /** Queues one event of `user` for every endpoint; the caller holds the user's row lock. */
  emit(trx: Queryable, user: EventUser, event: LifecycleEvent, now: number): Promise<void>
}

/** Webhooks off: nothing is written. */
export const NO_EVENTS: Events = {
  enabled: false,
  emit: () => Promise.resolve(),
}

/** Standard Webhooks leaves the id's form open; Svix's are `msg_` and a random string. */
export function newEventId(): string {
  return `evt_${randomBytes(16).toString('base64url')}`
}

export function createEvents(options: {
  /** WEBHOOK_URL: each event is addressed to every one of them. */
  endpoints: readonly string[]
  /** WEBHOOK_RETRY_FOR: how long failed tries are made again before the event is dead. */
  retryForMs: number
}): Events {
  if (options.endpoints.length === 0) return NO_EVENTS
  return {
    enabled: true,
    async emit(trx, user, event, now) {
      const seq = await nextEventSeq(trx, user.userId)
      await insertEvent(
        trx,
        {
          id: newEventId(),
          userId: user.userId,
          seq,
          type: event.type,
          body: eventBody(user, event, now),
        },
        { endpoints: options.endpoints, now, retryUntil: now + options.retryForMs },
      )
    },
  }
}
