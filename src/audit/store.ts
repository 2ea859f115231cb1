import type { AuditEventRow, Queryable } from '../db/schema.js'

// The one store that writes the `audit_events` table.

/** Inserts one event; an openId left out is read from the user row, while it still exists. */
export async function insertAuditEvent(db: Queryable, row: AuditEventRow): Promise<void> {
  const userId = row.user_id
  await db
    .insertInto('audit_events')
    .values({
      ...row,
      open_id:
        row.open_id !== null || userId === null
          ? row.open_id
          : (eb) => eb.selectFrom('users').select('open_id').where('id', '=', userId),
    })
    .execute()
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
