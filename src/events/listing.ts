import { createHash } from 'node:crypto'
import type { Queryable, WebhookDeliveryState } from '../db/schema.js'

/*
 * The lifecycle events as an operator reads them: each event with its user and, per endpoint,
 * where its delivery stands. Read only; outbox.ts writes the tables.
 */

/**
 * An endpoint as pages name it: a short key (an address may carry a token in its query, which
 * no page or URL should repeat) and a label of its origin and path.
 */
export interface Endpoint {
  key: string
  label: string
}

export function endpointOf(url: string): Endpoint {
  const key = createHash('sha256').update(url).digest('hex').slice(0, 16)
  let label: string
  try {
    const parsed = new URL(url)
    label = `${parsed.origin}${parsed.pathname}`
  } catch {
    label = key
  }
  return { key, label }
}

/** One endpoint's deliveries: how many wait, how many are dead, since when the oldest waits. */
export interface EndpointBacklog extends Endpoint {
  pending: number
  dead: number
  delivered: number
  /** Epoch ms of the oldest event still pending at this endpoint, or null. */
  oldestPendingAt: number | null
}

/** Every endpoint that has deliveries, with its counts (one delivery: one event to one endpoint). */
export async function endpointBacklogs(db: Queryable): Promise<EndpointBacklog[]> {
  const rows = await db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_events as e', 'e.id', 'd.event_id')
    .select((eb) => [
      'd.endpoint',
      'd.state',
      eb.fn.countAll<number | string>().as('count'),
      eb.fn.min('e.created_at').as('oldest'),
    ])
    .groupBy(['d.endpoint', 'd.state'])
    .execute()
  const byEndpoint = new Map<string, EndpointBacklog>()
  for (const row of rows) {
    const backlog = byEndpoint.get(row.endpoint) ?? {
      ...endpointOf(row.endpoint),
      pending: 0,
      dead: 0,
      delivered: 0,
      oldestPendingAt: null,
    }
    backlog[row.state] = Number(row.count)
    if (row.state === 'pending' && row.oldest !== null) backlog.oldestPendingAt = Number(row.oldest)
    byEndpoint.set(row.endpoint, backlog)
  }
  return [...byEndpoint.values()].sort((a, b) => a.label.localeCompare(b.label))
}

/** Where one event's delivery to one endpoint stands. */
export interface DeliveryView extends Endpoint {
  state: WebhookDeliveryState
  attempts: number
  lastError: string | null
  /** When it was delivered or given up; null while pending. */
  finishedAt: number | null
}

export interface EventView {
  id: string
  type: string
  userId: string
  /** From the event's body: it outlives the user row. */
  openId: string
  createdAt: number
  deliveries: DeliveryView[]
}

export interface EventFilter {
  /** Events with a delivery in this state (at `endpoint` when given); null: any. */
  state: WebhookDeliveryState | null
  /** An endpoint's key (endpointOf); null: any. */
  endpoint: string | null
  userId: string | null
}

/** One page of events, newest first, and how many events the filter finds in all. */
export async function pageEvents(
  db: Queryable,
  filter: EventFilter,
  offset: number,
  limit: number,
): Promise<{ rows: EventView[]; total: number }> {
  const endpoints =
    filter.endpoint === null
      ? null
      : (await knownEndpoints(db)).filter((url) => endpointOf(url).key === filter.endpoint)
  if (endpoints !== null && endpoints.length === 0) return { rows: [], total: 0 }
  const { state } = filter
  let query = db.selectFrom('webhook_events as e')
  if (state !== null || endpoints !== null) {
    query = query.where((eb) => {
      let deliveries = eb
        .selectFrom('webhook_deliveries as d')
        .select('d.id')
        .whereRef('d.event_id', '=', 'e.id')
      if (state !== null) deliveries = deliveries.where('d.state', '=', state)
      if (endpoints !== null) deliveries = deliveries.where('d.endpoint', 'in', endpoints)
      return eb.exists(deliveries)
    })
  }
  if (filter.userId !== null) query = query.where('e.user_id', '=', filter.userId)
  const [events, count] = await Promise.all([
    query
      .select(['e.id', 'e.type', 'e.user_id', 'e.created_at', 'e.body'])
      .orderBy('e.created_at', 'desc')
      .orderBy('e.user_id')
      .orderBy('e.seq', 'desc')
      .offset(offset)
      .limit(limit)
      .execute(),
    query.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
  ])
  return { rows: await withDeliveries(db, events), total: Number(count.n) }
}

/** Every endpoint that has deliveries (WEBHOOK_URL's, and any it named before). */
export async function knownEndpoints(db: Queryable): Promise<string[]> {
  const rows = await db.selectFrom('webhook_deliveries').select('endpoint').distinct().execute()
  return rows.map((row) => row.endpoint)
}

async function withDeliveries(
  db: Queryable,
  events: { id: string; type: string; user_id: string; created_at: number; body: string }[],
): Promise<EventView[]> {
  if (events.length === 0) return []
  const deliveries = await db
    .selectFrom('webhook_deliveries')
    .select(['event_id', 'endpoint', 'state', 'attempts', 'last_error', 'finished_at'])
    .where(
      'event_id',
      'in',
      events.map((event) => event.id),
    )
    .execute()
  return events.map((event) => ({
    id: event.id,
    type: event.type,
    userId: event.user_id,
    openId: openIdOf(event.body),
    createdAt: Number(event.created_at),
    deliveries: deliveries
      .filter((delivery) => delivery.event_id === event.id)
      .map((delivery) => ({
        ...endpointOf(delivery.endpoint),
        state: delivery.state,
        attempts: delivery.attempts,
        lastError: delivery.last_error,
        finishedAt: delivery.finished_at === null ? null : Number(delivery.finished_at),
      }))
      .sort((a, b) => a.label.localeCompare(b.label)),
  }))
}

function openIdOf(body: string): string {
  try {
    const openId = (JSON.parse(body) as { data?: { openId?: unknown } }).data?.openId
    return typeof openId === 'string' ? openId : ''
  } catch {
    return ''
  }
}
