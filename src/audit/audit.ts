import type { Clock } from '../clock.js'
import type { AuditEventRow, Queryable } from '../db/schema.js'
import { newId } from '../lib/secrets.js'
import {
  auditEventsAfter,
  auditEventsBefore,
  insertAuditEvent,
  insertAuditEvents,
  latestAuditEvents,
  pageAuditEvents,
  type AuditCursor,
  type AuditQuery,
} from './store.js'
import { offsetOf, PAGE_SIZE, type Paged } from '../lib/paging.js'

export type { AuditCursor, AuditQuery }

/**
 * What the trail records: each type once, as a key, so the compiler holds every list of types
 * (the console's filter, its labels) to the whole union.
 */
const TYPES = {
  registration: true,
  rotation: true,
  'identity-conflict': true,
  'university-linked': true,
  'university-denied': true,
  'university-failed': true,
  'university-refused': true,
  'university-unlinked': true,
  logout: true,
  expiry: true,
  erasure: true,
  suspension: true,
  restoration: true,
  'security-configuration': true,
  import: true,
  'console-sign-in': true,
  'console-sign-in-refused': true,
  'console-sign-out': true,
  'console-revoked': true,
  'console-action': true,
  'console-action-refused': true,
  'data-export': true,
} as const satisfies Record<string, true>

export type AuditEventType = keyof typeof TYPES

/** Every type of the trail, in the order above. */
export const AUDIT_EVENT_TYPES = Object.keys(TYPES) as readonly AuditEventType[]

/** Whether `text` names a type of the trail (a filter from a query string). */
export function isAuditEventType(text: string): text is AuditEventType {
  return Object.hasOwn(TYPES, text)
}

/** Where a change came from: an API request (with its client address), the CLI, or the service itself. */
export interface Origin {
  actor: string
  ip: string | null
}

export const SYSTEM: Origin = { actor: 'system', ip: null }

/** An API request from `ip` (the address after TRUST_PROXY). */
export function fromRequest(ip: string): Origin {
  return { actor: 'api', ip }
}

export interface AuditEvent {
  type: AuditEventType
  origin: Origin
  userId?: string | null
  openId?: string | null
  /** Non-secret facts only: a reason, a setting's name. Never a key, code, cookie or token. */
  detail?: Record<string, string | number | boolean>
}

export interface Audit {
  /** Records the event in `db` (pass the transaction of the change it describes). */
  record(db: Queryable, event: AuditEvent): Promise<void>
  /** Records many events in one statement, in order (a bulk change such as an import). */
  recordAll(db: Queryable, events: readonly AuditEvent[]): Promise<void>
}

/** The trail as an operator reads it (`campusgate audit tail`, the console). */
export interface AuditTrail {
  /** One page of the trail filtered, newest first, with the filtered trail's size. */
  page(filter: AuditQuery, page: number): Promise<Paged<AuditEventRow>>
  /** The filtered trail's next `limit` events before `cursor` (null: the newest), newest first. */
  before(filter: AuditQuery, cursor: AuditCursor | null, limit: number): Promise<AuditEventRow[]>
  /** The newest `limit` events (optionally of one openId), oldest first. */
  latest(limit: number, openId: string | null): Promise<AuditEventRow[]>
  /** Events after `cursor`, oldest first, at most `limit`. */
  after(cursor: AuditCursor, limit: number, openId: string | null): Promise<AuditEventRow[]>
}

export function createAuditTrail(db: Queryable): AuditTrail {
  return {
    async page(filter, page) {
      const found = await pageAuditEvents(db, filter, offsetOf(page), PAGE_SIZE)
      return { ...found, page }
    },
    before: (filter, cursor, limit) => auditEventsBefore(db, filter, cursor, limit),
    latest: (limit, openId) => latestAuditEvents(db, limit, openId),
    after: (cursor, limit, openId) => auditEventsAfter(db, cursor, limit, openId),
  }
}

/**
 * The audit trail. Services call `record` where the change happens, inside its transaction, so
 * an event exists exactly when its change does; `onRecorded` feeds the metrics.
 */
/**
 * Event ids sort in the order this process recorded them, so events of the same millisecond keep
 * their order (readers page by `at`, then `id`).
 */
let sequence = 0
function eventId(): string {
  sequence += 1
  return `${sequence.toString(36).padStart(10, '0')}-${newId()}`
}

export function createAudit(options: {
  clock: Clock
  onRecorded?: (event: AuditEvent) => void
}): Audit {
  const row = (event: AuditEvent) => ({
    id: eventId(),
    at: options.clock.now().getTime(),
    type: event.type,
    actor: event.origin.actor,
    user_id: event.userId ?? null,
    open_id: event.openId ?? null,
    ip: event.origin.ip,
    detail: event.detail === undefined ? null : JSON.stringify(event.detail),
  })
  return {
    async record(db, event) {
      await insertAuditEvent(db, row(event))
      options.onRecorded?.(event)
    },
    async recordAll(db, events) {
      await insertAuditEvents(db, events.map(row))
      for (const event of events) options.onRecorded?.(event)
    },
  }
}
