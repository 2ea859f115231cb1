import { sql } from 'kysely'
import type { IdentityKind, Queryable } from '../db/schema.js'
import { offsetOf, PAGE_SIZE, type Paged } from '../lib/paging.js'
import { linkedNow, userSearch, type UserQuery, type UserTier } from './reads.js'

/**
 * The users list and its download (docs/console.md, "What each page shows"), read in two steps so its cost does
 * not grow with the users it passes over: first which users, in order (their ids, from the
 * indexes where there is no filter), then what the page shows of those alone — the tier and the
 * last active day are read for fifty users, not for every one. Read only.
 */

export interface UserRowView {
  id: string
  openId: string
  unionId: string | null
  universitySubject: string | null
  universityEmail: string | null
  universityName: string | null
  universityLinkedAt: number | null
  tier: UserTier
  createdAt: number
  /** The last UTC day ('YYYY-MM-DD') the user used a key; null when never counted. */
  lastActiveDay: string | null
  /** An operator suspended the person (docs/console.md, "Suspending a user"). */
  suspended: boolean
}

/** When the list is read: the tier rule's inputs. */
export interface ListTime {
  now: number
  linkMaxAgeMs: number | null
}

/** Where a user stands in the list's order: its sort key (the download goes on after it). */
export interface UserListKey {
  /** The last active day, '' when never: only in the "last active first" order. */
  last: string
  createdAt: number
  id: string
}

function hasLiveSession(now: number) {
  return sql<boolean>`exists (select 1 from sessions s where s.user_id = users.id and s.expires_at > ${now})`
}

/** The users the query's search and tier find, not yet ordered. */
function found(db: Queryable, query: UserQuery, at: ListTime) {
  let rows = db.selectFrom('users')
  if (query.search !== '') rows = rows.where(userSearch(query.search))
  const live = hasLiveSession(at.now)
  const linked = linkedNow(at.now, at.linkMaxAgeMs)
  if (query.tier === 'none') rows = rows.where(sql<boolean>`not ${live}`)
  if (query.tier === 'messenger-registered')
    rows = rows.where(live).where(sql<boolean>`not ${linked}`)
  if (query.tier === 'university-registered') rows = rows.where(live).where(linked)
  return rows
}

/**
 * The ids of the users the query finds, in the list's order — newest first (created, then id,
 * both descending: the `users_created_at` index read backwards), or last active first — from
 * `offset` or after `after`, with the number found in all when `withTotal`.
 */
async function orderedIds(
  db: Queryable,
  query: UserQuery,
  at: ListTime,
  window: { offset: number; after: UserListKey | null; limit: number; withTotal: boolean },
): Promise<{ keys: UserListKey[]; total: number | null }> {
  const active = query.sort === 'active'
  // Each user's last day at once, grouped over the primary key (user_id, day), instead of a
  // lookup per user.
  const last = active ? sql<string>`coalesce(a.last, '')` : sql<string>`''`
  let rows = found(db, query, at).$if(active, (qb) =>
    qb.leftJoin(
      (eb) =>
        eb
          .selectFrom('user_active_days')
          .select(['user_id', (inner) => inner.fn.max('day').as('last')])
          .groupBy('user_id')
          .as('a'),
      'a.user_id',
      'users.id',
    ),
  )
  const after = window.after
  if (after !== null) {
    // Row values: the keys after `after` in the (descending) order of the list.
    rows = rows.where(
      active
        ? sql<boolean>`(${last}, users.created_at, users.id) < (${after.last}, ${after.createdAt}, ${after.id})`
        : sql<boolean>`(users.created_at, users.id) < (${after.createdAt}, ${after.id})`,
    )
  }
  let ordered = rows.select([last.as('last'), 'users.created_at', 'users.id'])
  if (window.withTotal) ordered = ordered.select(sql<number | string>`count(*) over ()`.as('total'))
  if (active) ordered = ordered.orderBy(last, 'desc')
  const listed = await ordered
    .orderBy('users.created_at', 'desc')
    .orderBy('users.id', 'desc')
    .offset(window.offset)
    .limit(window.limit)
    .execute()
  const first = listed[0] as { total?: number | string } | undefined
  return {
    keys: listed.map((row) => ({
      last: row.last,
      createdAt: Number(row.created_at),
      id: row.id,
    })),
    total: first?.total === undefined ? null : Number(first.total),
  }
}

/** What a page or a line of the download shows of each of `ids`, in their order. */
async function viewsOf(
  db: Queryable,
  ids: readonly string[],
  at: ListTime,
): Promise<UserRowView[]> {
  if (ids.length === 0) return []
  // The person's first messenger identity names them (docs/identities.md); their university
  // identity says what tier 2 proved.
  const first = (column: 'subject' | 'union_id') =>
    sql<string | null>`(select m.${sql.raw(column)} from identities m
      where m.user_id = users.id and m.kind = 'messenger' order by m.created_at, m.id limit 1)`
  const rows = await db
    .selectFrom('users')
    .leftJoin('identities as u', (join) =>
      join
        .onRef('u.user_id', '=', 'users.id')
        .on('u.kind', '=', sql.lit<IdentityKind>('university')),
    )
    .select([
      'users.id',
      first('subject').as('open_id'),
      first('union_id').as('union_id'),
      'u.subject as university_subject',
      'u.email as university_email',
      'u.name as university_name',
      'u.linked_at as university_linked_at',
      'users.created_at',
      'users.suspended_at',
      hasLiveSession(at.now).as('live'),
      linkedNow(at.now, at.linkMaxAgeMs).as('linked'),
      sql<string | null>`(select max(d.day) from user_active_days d where d.user_id = users.id)`.as(
        'last_active',
      ),
    ])
    .where('users.id', 'in', ids)
    .execute()
  const byId = new Map(rows.map((row) => [row.id, row]))
  return ids.flatMap((id) => {
    const row = byId.get(id)
    if (row === undefined) return [] // erased between the two reads
    return [
      {
        id: row.id,
        openId: row.open_id ?? '',
        unionId: row.union_id,
        universitySubject: row.university_subject,
        universityEmail: row.university_email,
        universityName: row.university_name,
        universityLinkedAt:
          row.university_linked_at === null ? null : Number(row.university_linked_at),
        // Booleans come back as 0/1 from SQLite and true/false from PostgreSQL.
        tier: !truthy(row.live)
          ? 'none'
          : truthy(row.linked)
            ? 'university-registered'
            : 'messenger-registered',
        createdAt: Number(row.created_at),
        lastActiveDay: row.last_active ?? null,
        suspended: row.suspended_at !== null,
      },
    ]
  })
}

function truthy(value: unknown): boolean {
  return value === true || value === 1 || value === '1' || value === 't'
}

/**
 * One page of users and how many the query finds; a page past the end is the last page (its
 * number in the answer). Without a filter the total is the table's count; with one it comes with
 * the page's ids (`count(*) over ()`), so the users are scanned once, not twice.
 */
export async function pageUsers(
  db: Queryable,
  query: UserQuery,
  at: ListTime & { page: number },
): Promise<Paged<UserRowView>> {
  const filtered = query.search !== '' || query.tier !== null
  const read = async (page: number) => {
    const [ids, count] = await Promise.all([
      orderedIds(db, query, at, {
        offset: offsetOf(page),
        after: null,
        limit: PAGE_SIZE,
        withTotal: filtered,
      }),
      filtered
        ? null
        : db
            .selectFrom('users')
            .select((eb) => eb.fn.countAll<number | string>().as('n'))
            .executeTakeFirstOrThrow(),
    ])
    return { keys: ids.keys, total: count === null ? ids.total : Number(count.n) }
  }
  let page = at.page
  let { keys, total } = await read(page)
  if (total === null) {
    // Past the end of a filtered list: no row carried the count.
    const count = await found(db, query, at)
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .executeTakeFirstOrThrow()
    total = Number(count.n)
  }
  if (keys.length === 0 && total > 0 && page > 1) {
    page = Math.ceil(total / PAGE_SIZE)
    keys = (await read(page)).keys
  }
  return {
    page,
    total,
    rows: await viewsOf(
      db,
      keys.map((key) => key.id),
      at,
    ),
  }
}

/**
 * The next `limit` users of the list after `after` (from the start when null), in the list's
 * order, with the key to go on from: the download reads the whole list this way, in batches, each
 * as cheap as a page wherever it is.
 */
export async function usersAfter(
  db: Queryable,
  query: UserQuery,
  at: ListTime,
  after: UserListKey | null,
  limit: number,
): Promise<{ rows: UserRowView[]; next: UserListKey | null }> {
  const { keys } = await orderedIds(db, query, at, { offset: 0, after, limit, withTotal: false })
  return {
    rows: await viewsOf(
      db,
      keys.map((key) => key.id),
      at,
    ),
    next: keys.length < limit ? null : keys[keys.length - 1],
  }
}
