import type { Dialect } from '../db/database.js'
import type { Queryable, WebhookDeliveryRow, WebhookDeliveryState } from '../db/schema.js'
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

/**
 * Claims one due try for `lockMs`, counting it. Due: pending, its time come, no try in flight, and
 * no earlier event of the same user still pending for the same endpoint (per-user order; a dead
 * one no longer holds the user back). The conditions are repeated on the outer UPDATE so that of
 * several workers (instances) racing for a row exactly one gets it; on PostgreSQL the inner SELECT
 * also skips rows another worker is claiming.
 */
export async function claimDueDelivery(
  db: Queryable,
  dialect: Dialect,
  now: number,
  lockMs: number,
): Promise<ClaimedDelivery | null> {
  const delivery = await db
    .updateTable('webhook_deliveries')
    .set((eb) => ({ locked_until: now + lockMs, attempts: eb('attempts', '+', 1) }))
    .where('id', '=', (eb) => {
      const due = eb
        .selectFrom('webhook_deliveries as d')
        .select('d.id')
        .where('d.state', '=', 'pending')
        .where('d.next_attempt_at', '<=', now)
        .where((w) => w.or([w('d.locked_until', 'is', null), w('d.locked_until', '<=', now)]))
        .where((w) =>
          w.not(
            w.exists(
              w
                .selectFrom('webhook_deliveries as e')
                .select('e.id')
                .whereRef('e.endpoint', '=', 'd.endpoint')
                .whereRef('e.user_id', '=', 'd.user_id')
                .whereRef('e.seq', '<', 'd.seq')
                .where('e.state', '=', 'pending'),
            ),
          ),
        )
        .orderBy('d.next_attempt_at')
        .limit(1)
      return dialect === 'postgres' ? due.forUpdate().skipLocked() : due
    })
    .where('state', '=', 'pending')
    .where((w) => w.or([w('locked_until', 'is', null), w('locked_until', '<=', now)]))
    .returningAll()
    .executeTakeFirst()
  if (delivery === undefined) return null
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
export async function markDelivered(
  db: Queryable,
  claim: { id: string; attempts: number },
  now: number,
): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ state: 'delivered', locked_until: null, finished_at: now, last_error: null })
    .where('id', '=', claim.id)
    .where('attempts', '=', claim.attempts)
    .execute()
}

/** A failed try, to be made again at `retryAt`. */
export async function scheduleDeliveryRetry(
  db: Queryable,
  claim: { id: string; attempts: number },
  retryAt: number,
  reason: string,
): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ locked_until: null, next_attempt_at: retryAt, last_error: reason })
    .where('id', '=', claim.id)
    .where('attempts', '=', claim.attempts)
    .execute()
}

/** A failed try after WEBHOOK_RETRY_FOR: the delivery is dead (kept, listed, retryable by hand). */
export async function markDead(
  db: Queryable,
  claim: { id: string; attempts: number },
  now: number,
  reason: string,
): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({ state: 'dead', locked_until: null, finished_at: now, last_error: reason })
    .where('id', '=', claim.id)
    .where('attempts', '=', claim.attempts)
    .execute()
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
 * Sends the event's deliveries in state `from` again: due now, with a new WEBHOOK_RETRY_FOR
 * window, the same event id. How many deliveries changed.
 */
export async function resendEvent(
  db: Queryable,
  eventId: string,
  from: 'dead' | 'delivered',
  now: number,
  retryUntil: number,
): Promise<number> {
  const result = await db
    .updateTable('webhook_deliveries')
    .set({
      state: 'pending',
      next_attempt_at: now,
      retry_until: retryUntil,
      locked_until: null,
      finished_at: null,
    })
    .where('event_id', '=', eventId)
    .where('state', '=', from)
    .executeTakeFirst()
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
