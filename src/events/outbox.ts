import { sql } from 'kysely'
import type { Dialect } from '../db/database.js'
import type { Queryable, WebhookDeliveryRow, WebhookDeliveryState } from '../db/schema.js'
import { claimDue, settleClaim, type Claim, type RowCondition } from '../lib/outbox.js'
import { newId } from '../lib/secrets.js'

// The one store that writes `webhook_events` and `webhook_deliveries`.

/** The next number in the user's order of events; the caller holds the user's row lock. */
export async function nextEventSeq(db: Queryable, userId: string): Promise<number> {
  const row = await db
    .selectFrom('webhook_events')
    .select((eb) => eb.fn.max('seq').as('last'))
    .where('user_id', '=', userId)
    .executeTakeFirst()
  return Number(row?.last ?? 0) + 1
}

/**
 * Queues an event in the caller's transaction, addressed to every endpoint, so it exists exactly
 * when the change it announces does.
 */
export async function insertEvent(
  db: Queryable,
  event: { id: string; userId: string; seq: number; type: string; body: string },
  delivery: { endpoints: readonly string[]; now: number; retryUntil: number },
): Promise<void> {
  await db
    .insertInto('webhook_events')
    .values({
      id: event.id,
      user_id: event.userId,
      seq: event.seq,
      type: event.type,
      body: event.body,
      created_at: delivery.now,
    })
    .execute()
  await db
    .insertInto('webhook_deliveries')
    .values(
      delivery.endpoints.map((endpoint) => ({
        id: newId(),
        event_id: event.id,
        endpoint,
        user_id: event.userId,
        seq: event.seq,
        state: 'pending' as const,
        attempts: 0,
        next_attempt_at: delivery.now,
        retry_until: delivery.retryUntil,
        first_tried_at: null,
        locked_until: null,
        last_error: null,
        finished_at: null,
      })),
    )
    .execute()
}

/** A claimed try: the delivery row and the body it sends. */
export interface ClaimedDelivery {
  delivery: WebhookDeliveryRow
  body: string
}

/** Pending: neither delivered nor dead (the outbox machinery's `unfinished`). */
const pending: RowCondition = (eb, col) => eb(col('state'), '=', 'pending')

/**
 * Per-user order: no earlier event of the same user is still pending for the same endpoint (a dead
 * one no longer holds the user back).
 */
const firstOfItsUser: RowCondition = (eb, col) =>
  eb.not(
    eb.exists(
      eb
        .selectFrom('webhook_deliveries as e' as 'outbox')
        .select(sql.lit(1).as('one'))
        .where(sql.ref('e.endpoint'), '=', sql.ref(col('endpoint')))
        .where(sql.ref('e.user_id'), '=', sql.ref(col('user_id')))
        .where(sql.ref('e.seq'), '<', sql.ref(col('seq')))
        .where(sql.ref('e.state'), '=', 'pending'),
    ),
  )

/**
 * Claims one due try for `lockMs`, counting it (lib/outbox.ts). Due: pending, its time come, no
 * try in flight, and no earlier event of the same user still pending for the same endpoint. Of
 * several workers (instances) racing for a row exactly one gets it. A delivery's first try starts
 * its window: WEBHOOK_RETRY_FOR from now, whatever it waited before (docs/webhooks.md, "Delivery").
 */
export async function claimDueDelivery(
  db: Queryable,
  dialect: Dialect,
  now: number,
  lockMs: number,
  retryForMs: number,
): Promise<ClaimedDelivery | null> {
  const claimed = await claimDue(db, {
    table: 'webhook_deliveries',
    unfinished: pending,
    alsoDue: firstOfItsUser,
    now,
    lockMs,
    skipLocked: dialect === 'postgres',
  })
  if (claimed === null) return null
  let delivery = claimed
  if (delivery.first_tried_at === null) {
    const window = { first_tried_at: now, retry_until: now + retryForMs }
    // Fenced by the claim, like its outcome: only the worker holding this try starts the window.
    await db
      .updateTable('webhook_deliveries')
      .set(window)
      .where('id', '=', delivery.id)
      .where('attempts', '=', delivery.attempts)
      .where('first_tried_at', 'is', null)
      .execute()
    delivery = { ...delivery, ...window }
  }
  const event = await db
    .selectFrom('webhook_events')
    .select('body')
    .where('id', '=', delivery.event_id)
    .executeTakeFirstOrThrow()
  return { delivery, body: event.body }
}

/*
 * The outcome of a try is written only if the row is still that try's: `attempts` is the fence.
 * A try that outlived its lock, while another worker took the row, changes nothing.
 */

/** The endpoint answered 2xx in time. */
export async function markDelivered(db: Queryable, claim: Claim, now: number): Promise<void> {
  await settleClaim(db, 'webhook_deliveries', claim, {
    state: 'delivered',
    finished_at: now,
    last_error: null,
  })
}

/** A failed try, to be made again at `retryAt`. */
export async function scheduleDeliveryRetry(
  db: Queryable,
  claim: Claim,
  retryAt: number,
  reason: string,
): Promise<void> {
  await settleClaim(db, 'webhook_deliveries', claim, {
    next_attempt_at: retryAt,
    last_error: reason,
  })
}

/** A failed try after WEBHOOK_RETRY_FOR: the delivery is dead (kept, listed, retryable by hand). */
export async function markDead(
  db: Queryable,
  claim: Claim,
  now: number,
  reason: string,
): Promise<void> {
  await settleClaim(db, 'webhook_deliveries', claim, {
    state: 'dead',
    finished_at: now,
    last_error: reason,
  })
}

/** What the metrics show at scrape time. */
export interface DeliveryStats {
  pending: number
  dead: number
  /** Epoch ms of the oldest event still pending for some endpoint, or null. */
  oldestPendingAt: number | null
}

export async function deliveryStats(db: Queryable): Promise<DeliveryStats> {
  const rows = await db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_events as e', 'e.id', 'd.event_id')
    .select((eb) => [
      'd.state',
      eb.fn.countAll<number | string>().as('count'),
      eb.fn.min('e.created_at').as('oldest'),
    ])
    .where('d.state', 'in', ['pending', 'dead'])
    .groupBy('d.state')
    .execute()
  const pending = rows.find((row) => row.state === 'pending')
  const dead = rows.find((row) => row.state === 'dead')
  return {
    pending: Number(pending?.count ?? 0),
    dead: Number(dead?.count ?? 0),
    oldestPendingAt: pending?.oldest == null ? null : Number(pending.oldest),
  }
}

/** An event as the operator sees it: its deliveries summed up (pending wins, then dead). */
export interface EventSummary {
  id: string
  type: string
  userId: string
  createdAt: number
  state: WebhookDeliveryState
  /** Tries made, over all endpoints. */
  tries: number
  lastError: string | null
}

function stateOf(states: readonly WebhookDeliveryState[]): WebhookDeliveryState {
  if (states.includes('pending')) return 'pending'
  if (states.includes('dead')) return 'dead'
  return 'delivered'
}

/** Events for the operator, newest first, optionally only those in one state. */
export async function listEvents(
  db: Queryable,
  options: { state: WebhookDeliveryState | null; limit: number; eventId?: string },
): Promise<EventSummary[]> {
  let query = db
    .selectFrom('webhook_events as e')
    .select(['e.id', 'e.type', 'e.user_id', 'e.created_at'])
    .orderBy('e.created_at', 'desc')
    .orderBy('e.user_id')
    .orderBy('e.seq', 'desc')
    .limit(options.limit)
  if (options.eventId !== undefined) query = query.where('e.id', '=', options.eventId)
  const state = options.state
  if (state !== null) {
    query = query.where((eb) => {
      const has = (wanted: WebhookDeliveryState) =>
        eb.exists(
          eb
            .selectFrom('webhook_deliveries as d')
            .select('d.id')
            .whereRef('d.event_id', '=', 'e.id')
            .where('d.state', '=', wanted),
        )
      if (state === 'pending') return has('pending')
      if (state === 'dead') return eb.and([has('dead'), eb.not(has('pending'))])
      return eb.and([has('delivered'), eb.not(has('pending')), eb.not(has('dead'))])
    })
  }
  const events = await query.execute()
  if (events.length === 0) return []
  const deliveries = await db
    .selectFrom('webhook_deliveries')
    .select(['event_id', 'state', 'attempts', 'last_error'])
    .where(
      'event_id',
      'in',
      events.map((event) => event.id),
    )
    .execute()
  return events.map((event) => {
    const own = deliveries.filter((d) => d.event_id === event.id)
    return {
      id: event.id,
      type: event.type,
      userId: event.user_id,
      createdAt: event.created_at,
      state: stateOf(own.map((d) => d.state)),
      tries: own.reduce((sum, d) => sum + d.attempts, 0),
      lastError: own.find((d) => d.last_error !== null)?.last_error ?? null,
    }
  })
}

/**
 * Sends deliveries in state `from` again: due now, with a new WEBHOOK_RETRY_FOR window from their
 * next try (they may wait behind an earlier event of their user first), the same event id. Those of one event (at one endpoint when named), or every one of an endpoint (an
 * operator's "retry all"). How many deliveries changed.
 */
export async function resendEvent(
  db: Queryable,
  which: { eventId: string; endpoint?: string } | { endpoint: string },
  from: 'dead' | 'delivered',
  now: number,
  retryUntil: number,
): Promise<number> {
  let query = db
    .updateTable('webhook_deliveries')
    .set({
      state: 'pending',
      next_attempt_at: now,
      retry_until: retryUntil,
      first_tried_at: null,
      locked_until: null,
      finished_at: null,
    })
    .where('state', '=', from)
  if ('eventId' in which) query = query.where('event_id', '=', which.eventId)
  if (which.endpoint !== undefined) query = query.where('endpoint', '=', which.endpoint)
  const result = await query.executeTakeFirst()
  return Number(result.numUpdatedRows)
}

/** Deletes events created before `before` whose every delivery has finished; how many. */
export async function deleteFinishedEvents(db: Queryable, before: number): Promise<number> {
  const result = await db
    .deleteFrom('webhook_events')
    .where('created_at', '<', before)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('webhook_deliveries as d')
            .select('d.id')
            .whereRef('d.event_id', '=', 'webhook_events.id')
            .where('d.state', '=', 'pending'),
        ),
      ),
    )
    .executeTakeFirst()
  return Number(result.numDeletedRows)
}
