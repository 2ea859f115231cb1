import type { Queryable } from '../db/schema.js'
import { endpointOf } from '../events/listing.js'

// The growing part of an access document, the audit trail and the lifecycle events, a page at a
// time (docs/console.md, "Access requests").

/**
 * Where a page of the history starts: the audit rows before (`at`, `id`) and the events before
 * `seq`, each walked newest first.
 */
export interface HistoryPosition {
  auditAt: number
  auditId: string
  eventSeq: number
}

/** The first page: everything (seq is a 32-bit integer column on PostgreSQL). */
export const NEWEST: HistoryPosition = {
  auditAt: Number.MAX_SAFE_INTEGER,
  auditId: '',
  eventSeq: 2_147_483_647,
}

/**
 * The audit trail and events of one page come to about this many bytes of JSON at most
 * (docs/console.md, "Access requests"): a document past it is paged.
 */
export const HISTORY_PAGE_BYTES = 4 * 1024 * 1024
/** Rows read at a time from each of the two lists while a page fills. */
const CHUNK = 1000

export function encodeCursor(position: HistoryPosition): string {
  const { auditAt, auditId, eventSeq } = position
  return Buffer.from(JSON.stringify([auditAt, auditId, eventSeq])).toString('base64url')
}

/** The position a cursor names, or null when it is not one a document gave. */
export function decodeCursor(cursor: string): HistoryPosition | null {
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    return null
  }
  if (
    !Array.isArray(value) ||
    value.length !== 3 ||
    !Number.isSafeInteger(value[0]) ||
    typeof value[1] !== 'string' ||
    value[1].length > 200 ||
    !Number.isSafeInteger(value[2]) ||
    value[2] > NEWEST.eventSeq ||
    value[2] < -1
  ) {
    return null
  }
  return { auditAt: value[0] as number, auditId: value[1], eventSeq: value[2] as number }
}

/**
 * Rows of one list, newest first, read `CHUNK` at a time from where the last chunk ended: a page
 * reads what it shows and a chunk more, never the whole history.
 */
function chunkedReader<R>(read: (after: R | null) => Promise<R[]>) {
  let rows: R[] = []
  let index = 0
  let ended = false
  return {
    async peek(): Promise<R | undefined> {
      if (index === rows.length && !ended) {
        const last = rows.at(-1) ?? null
        rows = await read(last)
        index = 0
        ended = rows.length < CHUNK
      }
      return rows[index]
    },
    skip(): void {
      index += 1
    },
  }
}

export const iso = (ms: number | string | null): string | null =>
  ms === null ? null : new Date(Number(ms)).toISOString()
export const isoOf = (ms: number | string): string => new Date(Number(ms)).toISOString()

export function parsed(json: string | null): Record<string, unknown> | null {
  if (json === null) return null
  try {
    const value: unknown = JSON.parse(json)
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : null
  } catch {
    return null
  }
}

/** One row of the access document's audit trail. */
export interface AuditItem {
  at: string
  type: string
  actor: string
  /** The address of the user's own requests; an operator's is not the user's data. */
  ip: string | null
  detail: Record<string, unknown> | null
}

/** One lifecycle event of the access document. */
export interface EventItem {
  id: string
  type: string
  createdAt: string
  data: Record<string, unknown>
  /** Where the event went: each endpoint's origin and path, and how its delivery stands. */
  deliveries: { endpoint: string; state: string; finishedAt: string | null }[]
}

export interface HistoryPage {
  audit: AuditItem[]
  events: EventItem[]
  /** Where the next page starts; null when nothing is older. */
  next: HistoryPosition | null
}

/** Pages of a user's audit trail and lifecycle events. */
export function createHistoryPages(db: Queryable) {
  type AuditRead = { id: string; at: number | string; item: AuditItem }
  type EventRead = { seq: number; createdAt: number; item: EventItem }

  function auditReader(userId: string, openIds: string[], from: HistoryPosition) {
    return chunkedReader<AuditRead>(async (last) => {
      const at = last === null ? from.auditAt : Number(last.at)
      const id = last === null ? from.auditId : last.id
      const rows = await db
        .selectFrom('audit_events')
        .select(['id', 'at', 'type', 'actor', 'ip', 'detail'])
        .where((eb) =>
          eb.or([
            eb('user_id', '=', userId),
            ...(openIds.length === 0 ? [] : [eb('open_id', 'in', openIds)]),
          ]),
        )
        .where((eb) => eb.or([eb('at', '<', at), eb.and([eb('at', '=', at), eb('id', '<', id)])]))
        .orderBy('at', 'desc')
        .orderBy('id', 'desc')
        .limit(CHUNK)
        .execute()
      return rows.map((row) => ({
        id: row.id,
        at: row.at,
        item: {
          at: isoOf(row.at),
          type: row.type,
          actor: row.actor,
          ip: row.actor === 'api' ? row.ip : null,
          detail: parsed(row.detail),
        },
      }))
    })
  }

  function eventReader(userId: string, from: HistoryPosition) {
    return chunkedReader<EventRead>(async (last) => {
      const seq = last === null ? from.eventSeq : last.seq
      const events = await db
        .selectFrom('webhook_events')
        .select(['id', 'seq', 'type', 'created_at', 'body'])
        .where('user_id', '=', userId)
        .where('seq', '<', seq)
        .orderBy('seq', 'desc')
        .limit(CHUNK)
        .execute()
      if (events.length === 0) return []
      const deliveries = await db
        .selectFrom('webhook_deliveries')
        .select(['event_id', 'endpoint', 'state', 'finished_at'])
        .where(
          'event_id',
          'in',
          events.map((event) => event.id),
        )
        .orderBy('endpoint')
        .execute()
      const byEvent = new Map<string, EventItem['deliveries']>()
      for (const delivery of deliveries) {
        const list = byEvent.get(delivery.event_id) ?? []
        list.push({
          endpoint: endpointOf(delivery.endpoint).label,
          state: delivery.state,
          finishedAt: iso(delivery.finished_at),
        })
        byEvent.set(delivery.event_id, list)
      }
      return events.map((event) => ({
        seq: Number(event.seq),
        createdAt: Number(event.created_at),
        item: {
          id: event.id,
          type: event.type,
          createdAt: isoOf(event.created_at),
          data: (parsed(event.body)?.data as Record<string, unknown> | undefined) ?? {},
          deliveries: byEvent.get(event.id) ?? [],
        },
      }))
    })
  }

  /**
   * The audit trail and events from `from` back in time, newest first from the two lists by time,
   * until about HISTORY_PAGE_BYTES of JSON (at least one row, so every page moves on); each list
   * in the order it happened. `next`: where the page after starts, null when nothing is older.
   */
  async function historyPage(
    userId: string,
    openIds: string[],
    from: HistoryPosition,
  ): Promise<HistoryPage> {
    const audits = auditReader(userId, openIds, from)
    const events = eventReader(userId, from)
    const auditItems: AuditItem[] = []
    const eventItems: EventItem[] = []
    const position = { ...from }
    let bytes = 0
    for (;;) {
      const [nextAudit, nextEvent] = [await audits.peek(), await events.peek()]
      if (nextAudit === undefined && nextEvent === undefined) {
        return { audit: auditItems.reverse(), events: eventItems.reverse(), next: null }
      }
      const takeAudit =
        nextEvent === undefined ||
        (nextAudit !== undefined && Number(nextAudit.at) >= nextEvent.createdAt)
      const item = takeAudit ? nextAudit!.item : nextEvent.item
      const size = Buffer.byteLength(JSON.stringify(item))
      if (bytes + size > HISTORY_PAGE_BYTES && auditItems.length + eventItems.length > 0) {
        return { audit: auditItems.reverse(), events: eventItems.reverse(), next: position }
      }
      bytes += size
      if (takeAudit) {
        auditItems.push(nextAudit!.item)
        position.auditAt = Number(nextAudit!.at)
        position.auditId = nextAudit!.id
        audits.skip()
      } else {
        eventItems.push(nextEvent.item)
        position.eventSeq = nextEvent.seq
        events.skip()
      }
    }
  }

  return { historyPage }
}
