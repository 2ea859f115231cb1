import { sql } from 'kysely'
import { precompiled } from '../db/precompiled.js'
import type { AuditEventRow, IdentityKind, Queryable } from '../db/schema.js'
import { likePrefix } from '../lib/paging.js'

// The one store that writes the `audit_events` table.

// Most events name their openId: that insert is built and compiled once, then only run.
const insertNamed = precompiled(
  (
    db,
    id: string,
    at: number,
    type: string,
    actor: string,
    userId: string | null,
    openId: string | null,
    ip: string | null,
    detail: string | null,
  ) =>
    db.insertInto('audit_events').values({
      id,
      at,
      type,
      actor,
      user_id: userId,
      open_id: openId,
      ip,
      detail,
    }),
  8,
)

/** Inserts one event; an openId left out is the person's first one, while they still exist. */
export async function insertAuditEvent(db: Queryable, row: AuditEventRow): Promise<void> {
  const userId = row.user_id
  if (row.open_id !== null || userId === null) {
    const { id, at, type, actor, open_id: openId, ip, detail } = row
    await insertNamed(db, id, at, type, actor, userId, openId, ip, detail)
    return
  }
  await db
    .insertInto('audit_events')
    .values({
      ...row,
      open_id: (eb) =>
        eb
          .selectFrom('identities')
          .select('subject')
          .where('user_id', '=', userId)
          .where('kind', '=', sql.lit<IdentityKind>('messenger'))
          .orderBy('created_at')
          .orderBy('id')
          .limit(1),
    })
    .execute()
}

/** Inserts many events in one statement (each names its openId): a bulk change records them so. */
export async function insertAuditEvents(
  db: Queryable,
  rows: readonly AuditEventRow[],
): Promise<void> {
  if (rows.length === 0) return
  await db.insertInto('audit_events').values(rows).execute()
}

/** For each of `openIds` with an event of `type`, the time of its latest one. */
export async function latestEventTimes(
  db: Queryable,
  type: string,
  openIds: readonly string[],
): Promise<Map<string, number>> {
  if (openIds.length === 0) return new Map()
  const rows = await db
    .selectFrom('audit_events')
    .select(['open_id', (eb) => eb.fn.max('at').as('at')])
    .where('type', '=', type)
    .where('open_id', 'in', openIds)
    .groupBy('open_id')
    .execute()
  return new Map(rows.map((row) => [row.open_id ?? '', Number(row.at)]))
}

/** Where a reader stopped: events come in (at, id) order. */
export interface AuditCursor {
  at: number
  id: string
}

/** The newest `limit` events (optionally of one openId), oldest first. */
export async function latestAuditEvents(
  db: Queryable,
  limit: number,
  openId: string | null,
): Promise<AuditEventRow[]> {
  let query = db
    .selectFrom('audit_events')
    .selectAll()
    .orderBy('at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
  if (openId !== null) query = query.where('open_id', '=', openId)
  return (await query.execute()).reverse()
}

/** Events after `cursor`, oldest first, at most `limit`. */
export async function auditEventsAfter(
  db: Queryable,
  cursor: AuditCursor,
  limit: number,
  openId: string | null,
): Promise<AuditEventRow[]> {
  let query = db
    .selectFrom('audit_events')
    .selectAll()
    .where((eb) =>
      eb.or([
        eb('at', '>', cursor.at),
        eb.and([eb('at', '=', cursor.at), eb('id', '>', cursor.id)]),
      ]),
    )
    .orderBy('at')
    .orderBy('id')
    .limit(limit)
  if (openId !== null) query = query.where('open_id', '=', openId)
  return query.execute()
}

/** Deletes events recorded before `before` (AUDIT_RETENTION); returns how many. */
export async function pruneAuditEvents(db: Queryable, before: number): Promise<number> {
  const result = await db.deleteFrom('audit_events').where('at', '<', before).executeTakeFirst()
  return Number(result.numDeletedRows)
}

/** What the console's audit page and a user's page filter the trail by; null: any. */
export interface AuditQuery {
  /** The user, by openId (and by id, for events recorded without one). */
  openId: string | null
  userId?: string | null
  type: string | null
  /**
   * `console:alice`, `cli:root`, `api`, `system`; an operator's bare name matches `console:NAME`;
   * in any case.
   */
  actor: string | null
  /** The client address, or the start of one (`10.1.`). */
  ip: string | null
  /** Epoch ms, inclusive; `until` exclusive. */
  since: number | null
  until: number | null
}

/** The trail as `filter` narrows it, not yet ordered. */
function filteredTrail(db: Queryable, filter: AuditQuery) {
  let query = db.selectFrom('audit_events')
  const { openId, userId, actor, ip } = filter
  if (openId !== null && userId != null) {
    query = query.where((eb) => eb.or([eb('open_id', '=', openId), eb('user_id', '=', userId)]))
  } else if (openId !== null) query = query.where('open_id', '=', openId)
  if (filter.type !== null) query = query.where('type', '=', filter.type)
  if (actor !== null) {
    // In any case: `Alice`, `alice` and `ALICE` find the operator alice (docs/console.md, "What each page shows").
    const named = actor.toLowerCase()
    query = query.where(sql<boolean>`lower(actor) in (${named}, ${`console:${named}`})`)
  }
  if (ip !== null) query = query.where(sql<boolean>`ip like ${likePrefix(ip)} escape '\\'`)
  if (filter.since !== null) query = query.where('at', '>=', filter.since)
  if (filter.until !== null) query = query.where('at', '<', filter.until)
  return query
}

/** One page of the trail, newest first, and how many events the whole filtered trail holds. */
export async function pageAuditEvents(
  db: Queryable,
  filter: AuditQuery,
  offset: number,
  limit: number,
): Promise<{ rows: AuditEventRow[]; total: number }> {
  const query = filteredTrail(db, filter)
  const [rows, count] = await Promise.all([
    query
      .selectAll()
      .orderBy('at', 'desc')
      .orderBy('id', 'desc')
      .offset(offset)
      .limit(limit)
      .execute(),
    query.select((eb) => eb.fn.countAll<number | string>().as('n')).executeTakeFirstOrThrow(),
  ])
  return { rows, total: Number(count.n) }
}

/**
 * The filtered trail's events before `before` (from the newest when null), newest first, at
 * most `limit`: the console's download reads the whole filtered trail in such batches, each as
 * cheap as the first wherever it is (the `audit_events_at` index, no offset).
 */
export async function auditEventsBefore(
  db: Queryable,
  filter: AuditQuery,
  before: AuditCursor | null,
  limit: number,
): Promise<AuditEventRow[]> {
  let query = filteredTrail(db, filter)
  if (before !== null) {
    query = query.where((eb) =>
      eb.or([
        eb('at', '<', before.at),
        eb.and([eb('at', '=', before.at), eb('id', '<', before.id)]),
      ]),
    )
  }
  return query.selectAll().orderBy('at', 'desc').orderBy('id', 'desc').limit(limit).execute()
}
