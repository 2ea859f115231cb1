import { sql, type OnConflictBuilder } from 'kysely'
import { precompiled } from '../db/precompiled.js'
import type { Database, IdentityKind, IdentityRow, Queryable } from '../db/schema.js'

// The one store that writes the `identities` table (docs/identities.md): the ways providers know
// a person. A messenger identity is (platform, appId, openId), a university identity (protocol,
// issuer, subject), at most one per person.

/*
 * The kinds are written into the SQL, never bound: SQLite uses a partial index (one person per
 * openId of an app, one university identity per person) only where the query's own text implies
 * the index's condition, and PostgreSQL's ON CONFLICT infers it the same way.
 */
const MESSENGER = sql.lit<IdentityKind>('messenger')
const UNIVERSITY = sql.lit<IdentityKind>('university')

/** The appId of an identity moved from before identities were recorded with their app. */
export const UNKNOWN_APP = ''

/** A messenger identity as registration finds it. */
export interface MessengerIdentityRef {
  id: string
  userId: string
  unionId: string | null
}

/** Who logged in, as registration writes it: the platform's identity and its encrypted key. */
export interface MessengerLogin {
  platform: string
  appId: string
  openId: string
  unionId: string | null
  /** The platform's session key, encrypted. */
  encryptedSessionKey: string
}

// Registration runs these on every login: built and compiled once, then only run.

/** More identities sharing a unionid than this are read again, in full, by `findHoldersOfUnionId`. */
const CANDIDATES = 16

/**
 * Registration's one read (docs/identities.md, "Registration's one read"): the identity of the
 * login, the same openId's identity from before apps were recorded, and the identities on the
 * platform that hold its unionid (at most CANDIDATES of them), in one statement. Each branch is
 * one index's equality lookup: no IN list and no ORDER BY, each of which costs SQLite a temporary
 * B-tree per run; the few rows are put in order here.
 */
export const findLoginCandidatesStatement = precompiled(
  (db, platform: string, appId: string, openId: string, unionId: string | null) => {
    const columns = ['id', 'user_id', 'realm', 'subject', 'union_id', 'created_at'] as const
    const onPlatform = db
      .selectFrom('identities')
      .select(columns)
      .where('kind', '=', MESSENGER)
      .where('provider', '=', platform)
    const sharingUnionId = onPlatform
      .where('union_id', '=', unionId)
      .limit(sql.lit(CANDIDATES))
      .as('sharing')
    return onPlatform
      .where('realm', '=', appId)
      .where('subject', '=', openId)
      .unionAll(onPlatform.where('realm', '=', sql.lit(UNKNOWN_APP)).where('subject', '=', openId))
      .unionAll(db.selectFrom(sharingUnionId).select(columns))
  },
  4,
)

/** What registration's one read found for a login. */
export interface LoginCandidates {
  /** The identity (platform, appId, openId). */
  known: MessengerIdentityRef | null
  /** The openId's identity from before apps were recorded (UNKNOWN_APP). */
  unknownApp: MessengerIdentityRef | null
  /** The people whose identities hold the login's unionid, oldest identity first. */
  holders: string[]
  /** False when there were more candidates than one read takes: `holders` may be short. */
  complete: boolean
}

/** The identities registration decides between, in one read. */
export async function findLoginCandidates(
  db: Queryable,
  login: { platform: string; appId: string; openId: string; unionId: string | null },
): Promise<LoginCandidates> {
  const { rows } = await findLoginCandidatesStatement(
    db,
    login.platform,
    login.appId,
    login.openId,
    login.unionId,
  )
  // Oldest first: the person whose identity holds the unionid longest leads `holders`.
  rows.sort((a, b) => a.created_at - b.created_at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  const ref = (row: (typeof rows)[number]): MessengerIdentityRef => ({
    id: row.id,
    userId: row.user_id,
    unionId: row.union_id,
  })
  const own = (row: (typeof rows)[number], realm: string) =>
    row.subject === login.openId && row.realm === realm
  const known = rows.find((row) => own(row, login.appId))
  const unknownApp = rows.find((row) => own(row, UNKNOWN_APP))
  // The unionid's branch returned every row that holds it unless it stopped at CANDIDATES (the
  // openId's own row may come twice: once by its openId, once by its unionid).
  const sharing = new Set<string>()
  const holders: string[] = []
  for (const row of rows) {
    if (login.unionId === null || row.union_id !== login.unionId) continue
    sharing.add(row.id)
    if (!holders.includes(row.user_id)) holders.push(row.user_id)
  }
  return {
    known: known === undefined ? null : ref(known),
    unknownApp: unknownApp === undefined ? null : ref(unknownApp),
    holders,
    complete: sharing.size < CANDIDATES,
  }
}

const refreshMessenger = precompiled(
  (db, id: string, encryptedSessionKey: string, unionId: string | null, now: number) =>
    db
      .updateTable('identities')
      .set((eb) => ({
        secret: encryptedSessionKey,
        union_id: eb.fn.coalesce(eb.val(unionId), 'union_id'),
        updated_at: now,
      }))
      .where('id', '=', id),
  4,
)

/**
 * A returning login: the identity keeps the platform's new session key, and a unionid that
 * arrives is stored (a later one replaces an earlier: the app moved to another open-platform account).
 */
export async function refreshMessengerIdentity(
  db: Queryable,
  identityId: string,
  login: Pick<MessengerLogin, 'encryptedSessionKey' | 'unionId'>,
  now: number,
): Promise<void> {
  await refreshMessenger(db, identityId, login.encryptedSessionKey, login.unionId, now)
}

/** The identity now belongs to `appId`; false when another login claimed it first. */
export async function claimUnknownApp(
  db: Queryable,
  identityId: string,
  appId: string,
  now: number,
): Promise<boolean> {
  const result = await db
    .updateTable('identities')
    .set({ realm: appId, updated_at: now })
    .where('id', '=', identityId)
    .where('realm', '=', UNKNOWN_APP)
    .executeTakeFirst()
  return result.numUpdatedRows > 0n
}

/** The people (at most `limit`) whose identities on `platform` hold `unionId`. */
export async function findHoldersOfUnionId(
  db: Queryable,
  platform: string,
  unionId: string,
  limit: number,
): Promise<string[]> {
  const rows = await db
    .selectFrom('identities')
    .select('user_id')
    .distinct()
    .where('kind', '=', MESSENGER)
    .where('provider', '=', platform)
    .where('union_id', '=', unionId)
    .orderBy('user_id')
    .limit(limit)
    .execute()
  return rows.map((row) => row.user_id)
}

/** A messenger identity's row as it is first written: no university fields, its key held. */
function newMessengerRow(
  identity: {
    id: string
    userId: string
    platform: string
    appId: string
    openId: string
    unionId: string | null
    encryptedSessionKey: string
  },
  now: number,
) {
  return {
    id: identity.id,
    user_id: identity.userId,
    kind: MESSENGER,
    provider: identity.platform,
    realm: identity.appId,
    subject: identity.openId,
    union_id: identity.unionId,
    secret: identity.encryptedSessionKey,
    email: null,
    name: null,
    is_student: null,
    linked_at: null,
    binding: null,
    created_at: now,
    updated_at: now,
  }
}

/** An identity an app already knows by that openId is left as it is (identities_messenger). */
const keepingExisting = (oc: OnConflictBuilder<Database, 'identities'>) =>
  oc.columns(['provider', 'realm', 'subject']).where('kind', '=', MESSENGER).doNothing()

const insertMessenger = precompiled(
  (
    db,
    id: string,
    userId: string,
    platform: string,
    appId: string,
    openId: string,
    unionId: string | null,
    encryptedSessionKey: string,
    now: number,
  ) =>
    db
      .insertInto('identities')
      .values(
        newMessengerRow({ id, userId, platform, appId, openId, unionId, encryptedSessionKey }, now),
      )
      // No RETURNING: SQLite gathers a RETURNING statement's rows in a temporary table first.
      .onConflict(keepingExisting),
  8,
)

/**
 * A new messenger identity of the person `userId`. Null when the same identity was created
 * meanwhile (a concurrent first login of the openId): the caller then takes that one.
 */
export async function insertMessengerIdentity(
  db: Queryable,
  identity: { id: string; userId: string } & MessengerLogin,
  now: number,
): Promise<{ id: string } | null> {
  const { numAffectedRows } = await insertMessenger(
    db,
    identity.id,
    identity.userId,
    identity.platform,
    identity.appId,
    identity.openId,
    identity.unionId,
    identity.encryptedSessionKey,
    now,
  )
  return (numAffectedRows ?? 0n) > 0n ? { id: identity.id } : null
}

/** A messenger identity, as the operator, the access document and the events see it (no secret). */
export interface MessengerIdentityView {
  id: string
  platform: string
  /** null: moved from before the app was recorded, and not used since. */
  appId: string | null
  openId: string
  unionId: string | null
  createdAt: number
  /** Whether the platform's session key is held (it is nullified with the last session). */
  sessionKeyHeld: boolean
}

function messengerView(row: IdentityRow): MessengerIdentityView {
  return {
    id: row.id,
    platform: row.provider,
    appId: row.realm === UNKNOWN_APP ? null : row.realm,
    openId: row.subject ?? '',
    unionId: row.union_id,
    createdAt: row.created_at,
    sessionKeyHeld: row.secret !== null,
  }
}

/** Every messenger identity of the person, the first one first. */
export async function messengerIdentitiesOf(
  db: Queryable,
  userId: string,
): Promise<MessengerIdentityView[]> {
  const rows = await db
    .selectFrom('identities')
    .selectAll()
    .where('user_id', '=', userId)
    .where('kind', '=', MESSENGER)
    .orderBy('created_at')
    .orderBy('id')
    .execute()
  return rows.map(messengerView)
}

/**
 * The openId a person is named by where no key names one (the events of a link, an erasure, a
 * suspension; the operator's lists): their first messenger identity's.
 */
export async function firstOpenIdOf(db: Queryable, userId: string): Promise<string | null> {
  const row = await db
    .selectFrom('identities')
    .select('subject')
    .where('user_id', '=', userId)
    .where('kind', '=', MESSENGER)
    .orderBy('created_at')
    .orderBy('id')
    .limit(1)
    .executeTakeFirst()
  return row?.subject ?? null
}

/**
 * The person an openId names: any of their messenger identities, on any platform and app (the
 * command line and the console take any of a person's openIds). The first created wins should
 * two people hold the same openId in different apps.
 */
export async function findPersonByOpenId(db: Queryable, openId: string): Promise<string | null> {
  const row = await db
    .selectFrom('identities')
    .select('user_id')
    .where('kind', '=', MESSENGER)
    .where('subject', '=', openId)
    .orderBy('created_at')
    .orderBy('id')
    .limit(1)
    .executeTakeFirst()
  return row?.user_id ?? null
}

/**
 * Nullifies the person's credentials (docs/sessions.md, "Ending a session"): every messenger
 * identity's session key and the university token, and the university link (the person needs tier
 * 2 again). The identities stay, and the one the link proved is free for another person
 * (exclusive binding).
 */
export async function nullifyCredentials(
  db: Queryable,
  userId: string,
  now: number,
): Promise<void> {
  await db
    .updateTable('identities')
    .set({ secret: null, linked_at: null, binding: null, updated_at: now })
    .where('user_id', '=', userId)
    .where((eb) => eb.or([eb('secret', 'is not', null), eb('linked_at', 'is not', null)]))
    .execute()
}

/** The identity a university link proved; fields the provider did not give are absent. */
export interface UniversityIdentityRecord {
  issuer: string
  subject: string
  email?: string
  name?: string
  isStudent?: boolean
}

/** The person's university identity (the link, or what it proved once it lapsed). */
export interface UniversityIdentityView {
  protocol: string | null
  issuer: string | null
  subject: string | null
  email: string | null
  name: string | null
  isStudent: boolean | null
  /** When the link was made; null once it lapsed or was nullified. */
  linkedAt: number | null
  tokenHeld: boolean
}

/** The person's university identity, or null when they never linked one. */
export async function universityIdentityOf(
  db: Queryable,
  userId: string,
): Promise<UniversityIdentityView | null> {
  const row = await db
    .selectFrom('identities')
    .selectAll()
    .where('user_id', '=', userId)
    .where('kind', '=', UNIVERSITY)
    .executeTakeFirst()
  if (row === undefined) return null
  return {
    protocol: row.provider === '' ? null : row.provider,
    issuer: row.realm === '' ? null : row.realm,
    subject: row.subject,
    email: row.email,
    name: row.name,
    isStudent: row.is_student === null ? null : row.is_student !== 0,
    linkedAt: row.linked_at,
    tokenHeld: row.secret !== null,
  }
}

/**
 * Records the link tier 2 proved as the person's university identity (replacing what an earlier
 * link proved): the provider's token (encrypted; null when the protocol gives none), the identity,
 * and under exclusive binding its `binding`, unique among people, so a race with another person
 * over one identity fails here.
 */
export async function setUniversityLink(
  db: Queryable,
  link: {
    id: string
    userId: string
    protocol: string
    encryptedToken: string | null
    identity: UniversityIdentityRecord | null
    binding: string | null
  },
  now: number,
): Promise<void> {
  const { identity } = link
  const values = {
    provider: link.protocol,
    realm: identity?.issuer ?? '',
    subject: identity?.subject ?? null,
    secret: link.encryptedToken,
    email: identity?.email ?? null,
    name: identity?.name ?? null,
    is_student: identity?.isStudent === undefined ? null : Number(identity.isStudent),
    linked_at: now,
    binding: link.binding,
    updated_at: now,
  }
  await db
    .insertInto('identities')
    .values({
      id: link.id,
      user_id: link.userId,
      kind: 'university',
      union_id: null,
      created_at: now,
      ...values,
    })
    .onConflict((oc) => oc.column('user_id').where('kind', '=', UNIVERSITY).doUpdateSet(values))
    .execute()
}

/** Another person whose live link holds this binding (exclusive binding), or `null`. */
export async function findBindingHolder(
  db: Queryable,
  binding: string,
  exceptUserId: string,
): Promise<string | null> {
  const row = await db
    .selectFrom('identities')
    .select('user_id')
    .where('binding', '=', binding)
    .where('user_id', '!=', exceptUserId)
    .executeTakeFirst()
  return row?.user_id ?? null
}

const LAPSED = (now: number) =>
  ({ secret: null, linked_at: null, binding: null, updated_at: now }) as const

/**
 * UNIVERSITY_LINK_MAX_AGE: links holding `binding` made at or before `linkedBefore` have lapsed.
 * Their token is nullified and their binding freed, so the identity can be proved again (by
 * anyone). The people whose link this lapsed.
 */
export async function lapseLinksOfBinding(
  db: Queryable,
  binding: string,
  linkedBefore: number,
  now: number,
): Promise<string[]> {
  const rows = await db
    .updateTable('identities')
    .set(LAPSED(now))
    .where('kind', '=', UNIVERSITY)
    .where('binding', '=', binding)
    .where('linked_at', '<=', linkedBefore)
    .returning('user_id')
    .execute()
  return rows.map((row) => row.user_id)
}

/** Lapses the person's link if it was made at or before `linkedBefore`; whether it did. */
export async function lapseLinkOfUser(
  db: Queryable,
  userId: string,
  linkedBefore: number,
  now: number,
): Promise<boolean> {
  const result = await db
    .updateTable('identities')
    .set(LAPSED(now))
    .where('user_id', '=', userId)
    .where('kind', '=', UNIVERSITY)
    .where('linked_at', '<=', linkedBefore)
    .executeTakeFirst()
  return result.numUpdatedRows > 0n
}

/** People whose university link was made at or before `linkedBefore` (it has lapsed), oldest first. */
export async function findUsersWithLapsedLinks(
  db: Queryable,
  linkedBefore: number,
  limit: number,
): Promise<string[]> {
  const rows = await db
    .selectFrom('identities')
    .select('user_id')
    .where('kind', '=', UNIVERSITY)
    .where('linked_at', '<=', linkedBefore)
    .orderBy('linked_at')
    .limit(limit)
    .execute()
  return rows.map((row) => row.user_id)
}

/** Whether the person holds a university link now (lapsed or not by the tier's rule). */
export async function hasUniversityLink(db: Queryable, userId: string): Promise<boolean> {
  const row = await db
    .selectFrom('identities')
    .select(sql<number>`1`.as('one'))
    .where('user_id', '=', userId)
    .where('kind', '=', UNIVERSITY)
    .where('linked_at', 'is not', null)
    .executeTakeFirst()
  return row !== undefined
}

/** A WeChat identity of the original server's import, with when its person was last written. */
export interface WechatPersonVersion {
  userId: string
  identityId: string
  openId: string
  /** null: moved from before the app was recorded, and not used from an app since. */
  appId: string | null
  /** When campusgate last wrote the person. */
  updatedAt: number
}

/** The WeChat identities among `openIds` (in any app), the oldest of each openId. */
export async function findWechatPeople(
  db: Queryable,
  openIds: readonly string[],
): Promise<WechatPersonVersion[]> {
  if (openIds.length === 0) return []
  const rows = await db
    .selectFrom('identities')
    .innerJoin('users', 'users.id', 'identities.user_id')
    .select([
      'identities.id',
      'identities.user_id',
      'identities.subject',
      'identities.realm',
      'users.updated_at',
    ])
    .where('identities.kind', '=', MESSENGER)
    .where('identities.provider', '=', 'wechat')
    .where('identities.subject', 'in', openIds)
    .orderBy('identities.created_at', 'desc')
    .orderBy('identities.id', 'desc')
    .execute()
  // Newest first, so the oldest of an openId is the one kept.
  const byOpenId = new Map(
    rows.map((row) => [
      row.subject ?? '',
      {
        userId: row.user_id,
        identityId: row.id,
        openId: row.subject ?? '',
        appId: row.realm === UNKNOWN_APP ? null : row.realm,
        updatedAt: row.updated_at,
      },
    ]),
  )
  return [...byOpenId.values()]
}

/**
 * The WeChat identities of people the import creates (their app unknown, no unionid), in one
 * statement; an identity that exists meanwhile is left as it is. The openIds this created.
 */
export async function insertImportedIdentities(
  db: Queryable,
  identities: readonly {
    id: string
    userId: string
    openId: string
    encryptedSessionKey: string
  }[],
  now: number,
): Promise<Set<string>> {
  if (identities.length === 0) return new Set()
  const rows = await db
    .insertInto('identities')
    .values(
      identities.map((identity) =>
        newMessengerRow(
          { ...identity, platform: 'wechat', appId: UNKNOWN_APP, unionId: null },
          now,
        ),
      ),
    )
    .onConflict(keepingExisting)
    .returning('subject')
    .execute()
  return new Set(rows.map((row) => row.subject ?? ''))
}
