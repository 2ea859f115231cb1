import { sql } from 'kysely'
import type { IdentityKind, Queryable } from '../db/schema.js'
import { likeInfix } from '../lib/paging.js'
import type { Tier } from '../sessions/service.js'

/**
 * What the console shows that no service reads: figures over several tables, the list of users.
 * Read only: the console changes things through the services alone.
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
  /** Every user campusgate holds, whenever created. */
  users: number
  newUsers: DailySeries
  links: DailySeries
  liveSessions: number
  tier2Sessions: number
  mail: Backlog
}

/**
 * The SQL of "the person is at tier 2 now": the one rule (sessions/tier.ts), lapse included, over
 * their university identity (docs/identities.md); `person` names the column of their id.
 */
export function linkedNow(now: number, linkMaxAgeMs: number | null, person = 'users.id') {
  return sql<boolean>`exists (select 1 from identities u where u.user_id = ${sql.ref(person)}
    and u.kind = 'university' and u.linked_at is not null and u.linked_at > ${
      linkMaxAgeMs === null ? -1 : now - linkMaxAgeMs
    })`
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
  const [created, linked, users] = await Promise.all([
    perDay(db, 'users', 'created_at', since),
    // Links as they happened (a link ended since still counts on its day): the audit trail's.
    perDay(db, 'audit_events', 'at', since, 'university-linked'),
    db
      .selectFrom('users')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .executeTakeFirstOrThrow(),
  ])
  const sessions = await db
    .selectFrom('sessions')
    .select((eb) => [
      eb.fn.countAll<number | string>().as('live'),
      eb.fn
        .sum<number | string | null>(
          eb
            .case()
            .when(linkedNow(now, linkMaxAgeMs, 'sessions.user_id'))
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
  const pending = mails.find((row) => row.state === 'pending')
  return {
    users: Number(users.n),
    newUsers: series(created, today, days),
    links: series(linked, today, days),
    liveSessions: Number(sessions.live),
    tier2Sessions: Number(sessions.tier2 ?? 0),
    mail: {
      pending: Number(pending?.count ?? 0),
      dead: Number(mails.find((row) => row.state === 'dead')?.count ?? 0),
      oldestPendingAt: pending?.oldest == null ? null : Number(pending.oldest),
    },
  }
}

/** A user's tier now; `none` without a live session. */
export type UserTier = Tier | 'none'

export interface UserQuery {
  /** Any part of an id, university subject, email or name in any case, or a confirmation address. */
  search: string
  tier: UserTier | null
  sort: 'created' | 'active'
}

/**
 * The users search (docs/console.md, "What each page shows"): any part of an openId, unionId, university subject,
 * university email or name, in any case (LIKE's `%` and `_` match themselves), or the exact address
 * (any case) a user asked confirmation mail for, whatever became of the link. The one place that
 * knows which columns find a person: a condition on `users`, for the list and its download.
 *
 * No index serves a match inside a value, so every identity is read once (docs/identities.md: a
 * person's openIds, unionids and university identity are rows of `identities`), its columns
 * joined into one lowered value with a separator no search holds: one `lower` and one `LIKE` an
 * identity instead of five of each, and the people found come out of that one scan
 * (docs/console.md, "Speed").
 */
export function userSearch(search: string) {
  // A control character is no part of any id, address or name: the separator stays unmatched.
  // eslint-disable-next-line no-control-regex
  const text = search.toLowerCase().replace(/[\u0000-\u001f]/g, '')
  const columns = ['subject', 'union_id', 'email', 'name']
  const joined = sql.join(
    columns.map((column) => sql`coalesce(${sql.ref(`i.${column}`)}, '')`),
    sql` || ${SEPARATOR} || `,
  )
  return sql<boolean>`(users.id in (select i.user_id from identities i where lower(${joined}) like ${likeInfix(text)} escape '\\') or users.id in (select m.user_id from mail_outbox m where lower(m.recipient) = ${text}))`
}

const SEPARATOR = '\n'

/** The university identity the person proved; null when never linked. No token, no binding hash. */
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
    .selectFrom('identities')
    .select(['subject', 'realm', 'email', 'name', 'is_student'])
    .where('user_id', '=', userId)
    .where('kind', '=', sql.lit<IdentityKind>('university'))
    .executeTakeFirst()
  if (row === undefined || (row.subject === null && row.email === null)) return null
  return {
    subject: row.subject,
    issuer: row.realm === '' ? null : row.realm,
    email: row.email,
    name: row.name,
    isStudent: row.is_student === null ? null : row.is_student === 1,
  }
}

/**
 * Which of `openIds` still name a person: a list shows the others as erased, never as a link to a
 * page that is gone (the audit trail and the lifecycle events outlive the person).
 */
export async function existingOpenIds(
  db: Queryable,
  openIds: readonly (string | null)[],
): Promise<ReadonlySet<string>> {
  const wanted = [...new Set(openIds.filter((id): id is string => id !== null && id !== ''))]
  if (wanted.length === 0) return new Set()
  const rows = await db
    .selectFrom('identities')
    .select('subject')
    .where('kind', '=', sql.lit<IdentityKind>('messenger'))
    .where('subject', 'in', wanted)
    .execute()
  return new Set(rows.map((row) => row.subject ?? ''))
}
