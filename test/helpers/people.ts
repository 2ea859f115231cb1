import type { Kysely } from 'kysely'
import type { Database } from '../../src/db/schema.js'

/**
 * A person as one row, the way tests read them: the person, their first messenger identity
 * (openId, unionid, session key) and their university identity (docs/identities.md). Secrets stay
 * as stored (encrypted or null).
 */
export interface PersonRow {
  id: string
  open_id: string
  union_id: string | null
  messenger_session_key: string | null
  university_token: string | null
  university_linked_at: number | null
  university_issuer: string | null
  university_subject: string | null
  university_email: string | null
  university_name: string | null
  university_is_student: number | null
  university_binding: string | null
  created_at: number
  updated_at: number
}

/** The person one of whose messenger identities has `openId`, or undefined. */
export async function personRow(
  db: Kysely<Database>,
  openId: string,
): Promise<PersonRow | undefined> {
  const identity = await db
    .selectFrom('identities')
    .select('user_id')
    .where('kind', '=', 'messenger')
    .where('subject', '=', openId)
    .orderBy('created_at')
    .executeTakeFirst()
  if (identity === undefined) return undefined
  const user = await db
    .selectFrom('users')
    .selectAll()
    .where('id', '=', identity.user_id)
    .executeTakeFirstOrThrow()
  const identities = await db
    .selectFrom('identities')
    .selectAll()
    .where('user_id', '=', user.id)
    .orderBy('created_at')
    .orderBy('id')
    .execute()
  const messenger = identities.find((row) => row.kind === 'messenger')!
  const university = identities.find((row) => row.kind === 'university')
  return {
    id: user.id,
    open_id: messenger.subject ?? '',
    union_id: messenger.union_id,
    messenger_session_key: messenger.secret,
    university_token: university?.secret ?? null,
    university_linked_at: university?.linked_at ?? null,
    university_issuer:
      university === undefined || university.realm === '' ? null : university.realm,
    university_subject: university?.subject ?? null,
    university_email: university?.email ?? null,
    university_name: university?.name ?? null,
    university_is_student: university?.is_student ?? null,
    university_binding: university?.binding ?? null,
    created_at: user.created_at,
    updated_at: user.updated_at,
  }
}

export async function personRowOrThrow(db: Kysely<Database>, openId: string): Promise<PersonRow> {
  const row = await personRow(db, openId)
  if (row === undefined) throw new Error(`no person with openId ${openId}`)
  return row
}

/** The person's id, by one of their openIds. */
export async function userIdOf(db: Kysely<Database>, openId: string): Promise<string> {
  return (await personRowOrThrow(db, openId)).id
}

/**
 * A person written straight into the database, with one WeChat identity (by default of an app
 * not recorded, as a person moved from before identities): what a test seeds before the service
 * reads it. The identity's id, for the sessions it seeds.
 */
export async function insertPerson(
  db: Kysely<Database>,
  person: {
    id: string
    openId: string
    createdAt: number
    identityId?: string
    appId?: string
    platform?: string
    unionId?: string | null
    messengerSessionKey?: string | null
  },
): Promise<{ identityId: string }> {
  const identityId = person.identityId ?? `${person.id}-identity`
  await db
    .insertInto('users')
    .values({ id: person.id, created_at: person.createdAt, updated_at: person.createdAt })
    .execute()
  await db
    .insertInto('identities')
    .values({
      id: identityId,
      user_id: person.id,
      kind: 'messenger',
      provider: person.platform ?? 'wechat',
      realm: person.appId ?? '',
      subject: person.openId,
      union_id: person.unionId ?? null,
      secret: person.messengerSessionKey ?? null,
      email: null,
      name: null,
      is_student: null,
      linked_at: null,
      binding: null,
      created_at: person.createdAt,
      updated_at: person.createdAt,
    })
    .execute()
  return { identityId }
}
