import { sql } from 'kysely'
import type { AuditEventRow, Queryable, WebhookDeliveryState } from '../db/schema.js'

/**
 * What the console shows that no service reads yet: figures over several tables, the user
 * search, one user's events, the audit trail filtered. Read only: the console changes things
 * through the services alone.
 */

const DAY_MS = 86_400_000

/** Counts per UTC day (epoch day number → count) of `column` of `table` since `since`. */
async function perDay(
  db: Queryable,
  table: 'users' | 'audit_events',
  column: 'created_at' | 'at',
  since: number,
  type?: string,
): Promise<Map<number, number>> {
  const day = sql<number>`${sql.ref(column)} / ${sql.lit(DAY_MS)}`
  let query = db
    .selectFrom(table as 'users')
    .select([day.as('day'), sql<number | string>`count(*)`.as('count')])
    .where(sql.ref(column), '>=', since)
    .groupBy(sql`1`)
  if (type !== undefined) query = query.where(sql.ref('type'), '=', type)
  const rows = await query.execute()
  return new Map(rows.map((row) => [Math.floor(Number(row.day)), Number(row.count)]))
}

export interface DailySeries {
  /** Epoch day numbers, oldest first, today last. */
  days: number[]
  values: number[]
}

function series(counts: Map<number, number>, today: number, length: number): DailySeries {
  const days = Array.from({ length }, (_, index) => today - length + 1 + index)
  return { days, values: days.map((day) => counts.get(day) ?? 0) }
}

/** An outbox's waiting work: the webhook deliveries' comes from `events/`, the mail's from here. */
export interface Backlog {
  pending: number
  dead: number
  oldestPendingAt: number | null
}

export interface Figures {
  newUsers: DailySeries
  links: DailySeries
  liveSessions: number
  tier2Sessions: number
  mail: Backlog
}

/** The overview's figures, from the database, so every instance shows the same. */
export async function readFigures(
  db: Queryable,
  now: number,
  linkMaxAgeMs: number | null,
  days = 30,
): Promise<Figures> {
  const today = Math.floor(now / DAY_MS)
  const since = (today - days + 1) * DAY_MS
  const [created, linked] = await Promise.all([
    perDay(db, 'users', 'created_at', since),
    // Links as they happened (a link ended since still counts on its day): the audit trail's.
    perDay(db, 'audit_events', 'at', since, 'university-linked'),
  ])
  const sessions = await db
    .selectFrom('sessions')
    .innerJoin('users', 'users.id', 'sessions.user_id')
    .select((eb) => [
      eb.fn.countAll<number | string>().as('live'),
      eb.fn
        .sum<number | string | null>(
          eb
            .case()
            .when(
              eb.and([
                eb('users.university_linked_at', 'is not', null),
                eb(
                  'users.university_linked_at',
                  '>',
                  linkMaxAgeMs === null ? -1 : now - linkMaxAgeMs,
                ),
              ]),
            )
            .then(1)
            .else(0)
            .end(),
        )
        .as('tier2'),
    ])
    .where('sessions.expires_at', '>', now)
    .executeTakeFirstOrThrow()
  const mails = await db
    .selectFrom('mail_outbox')
    .select((eb) => [
      eb.case().when('abandoned_at', 'is not', null).then('dead').else('pending').end().as('state'),
      eb.fn.countAll<number | string>().as('count'),
      eb.fn.min('created_at').as('oldest'),
    ])
    .where('sent_at', 'is', null)
    .groupBy(sql`1`)
    .execute()
  const of = (rows: { state: string; count: number | string; oldest: unknown }[]) => {
    const pending = rows.find((row) => row.state === 'pending')
    return {
      pending: Number(pending?.count ?? 0),
      dead: Number(rows.find((row) => row.state === 'dead')?.count ?? 0),
      oldestPendingAt: pending?.oldest == null ? null : Number(pending.oldest),
    }
  }
  return {
    newUsers: series(created, today, days),
    links: series(linked, today, days),
    liveSessions: Number(sessions.live),
    tier2Sessions: Number(sessions.tier2 ?? 0),
    mail: of(mails),
  }
}

export interface FoundUser {
  id: string
  openId: string
  universityEmail: string | null
  createdAt: number
}

/** Users whose openId, university email (any case) or university subject is `query` exactly. */
export async function searchUsers(db: Queryable, query: string): Promise<FoundUser[]> {
  const rows = await db
    .selectFrom('users')
    .select(['id', 'open_id', 'university_email', 'created_at'])
    .where((eb) =>
      eb.or([
        eb('open_id', '=', query),
        eb(eb.fn('lower', ['university_email']), '=', query.toLowerCase()),
        eb('university_subject', '=', query),
      ]),
    )
    .orderBy('created_at', 'desc')
    .limit(20)
    .execute()
  return rows.map((row) => ({
    id: row.id,
    openId: row.open_id,
    universityEmail: row.university_email,
    createdAt: Number(row.created_at),
  }))
}

/** The university identity the user proved; null when never linked. No token, no binding hash. */
export async function readUniversityIdentity(
  db: Queryable,
  userId: string,
): Promise<{
  subject: string | null
  issuer: string | null
  email: string | null
  name: string | null
  isStudent: boolean | null
} | null> {
  const row = await db
    .selectFrom('users')
    .select([
      'university_subject',
      'university_issuer',
      'university_email',
      'university_name',
      'university_is_student',
    ])
    .where('id', '=', userId)
    .executeTakeFirst()
  if (row === undefined || (row.university_subject === null && row.university_email === null))
    return null
  return {
    subject: row.university_subject,
    issuer: row.university_issuer,
    email: row.university_email,
    name: row.university_name,
    isStudent: row.university_is_student === null ? null : row.university_is_student === 1,
  }
}

export interface UserEvent {
  id: string
  type: string
  createdAt: number
  state: WebhookDeliveryState
}

/** The user's lifecycle events, newest first: pending wins over dead, dead over delivered. */
export async function eventsOfUser(db: Queryable, userId: string): Promise<UserEvent[]> {
  const rows = await db
    .selectFrom('webhook_events as e')
    .leftJoin('webhook_deliveries as d', 'd.event_id', 'e.id')
    .select(['e.id', 'e.type', 'e.created_at', 'e.seq', 'd.state'])
    .where('e.user_id', '=', userId)
    .orderBy('e.seq', 'desc')
    .limit(200)
    .execute()
  const events = new Map<string, UserEvent>()
  const rank = { pending: 3, dead: 2, delivered: 1 } as const
  for (const row of rows) {
    const state = row.state ?? 'delivered'
    const known = events.get(row.id)
    if (known === undefined) {
      events.set(row.id, {
        id: row.id,
        type: row.type,
        createdAt: Number(row.created_at),
        state,
      })
    } else if (rank[state] > rank[known.state]) known.state = state
  }
  return [...events.values()].slice(0, 50)
}

export interface AuditFilter {
  openId: string | null
  userId?: string | null
  type: string | null
  since: number | null
  until: number | null
  limit: number
}

/** The audit trail, newest first, filtered by user, type and time. */
export async function filterAudit(db: Queryable, filter: AuditFilter): Promise<AuditEventRow[]> {
  let query = db
    .selectFrom('audit_events')
    .selectAll()
    .orderBy('at', 'desc')
    .orderBy('id', 'desc')
    .limit(filter.limit)
  const { openId, userId } = filter
  if (openId !== null && userId != null) {
    query = query.where((eb) => eb.or([eb('open_id', '=', openId), eb('user_id', '=', userId)]))
  } else if (openId !== null) query = query.where('open_id', '=', openId)
  if (filter.type !== null) query = query.where('type', '=', filter.type)
  if (filter.since !== null) query = query.where('at', '>=', filter.since)
  if (filter.until !== null) query = query.where('at', '<', filter.until)
  return query.execute()
}

/** Abandoned mail, newest first (the outbox service lists the queued). No body is read. */
export async function deadMail(
  db: Queryable,
  limit: number,
): Promise<
  { id: string; recipient: string; createdAt: number; attempts: number; lastError: string | null }[]
> {
  const rows = await db
    .selectFrom('mail_outbox')
    .select(['id', 'recipient', 'created_at', 'attempts', 'last_error'])
    .where('abandoned_at', 'is not', null)
    .orderBy('created_at', 'desc')
    .limit(limit)
    .execute()
  return rows.map((row) => ({
    id: row.id,
    recipient: row.recipient,
    createdAt: Number(row.created_at),
    attempts: row.attempts,
    lastError: row.last_error,
  }))
}
