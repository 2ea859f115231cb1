import type { Queryable } from '../db/schema.js'
import { lockName } from '../db/named-locks.js'
import {
  claimUnknownApp,
  findHoldersOfUnionId,
  findLoginCandidates,
  firstOpenIdOf,
  hasUniversityLink,
  insertMessengerIdentity,
  refreshMessengerIdentity,
  type LoginCandidates,
  type MessengerIdentityRef,
  type MessengerLogin,
} from '../identities/store.js'
import { deleteUser, insertUser, lockUser } from '../users/store.js'

export type { MessengerLogin }

/*
 * Who a registration is (docs/identities.md, "One person, several apps"): the person an identity
 * names, a person another identity of the same platform shares its unionid with, or someone new.
 * A step of registration (lifecycle.ts), in its transaction; the person's row is locked before any
 * of their other rows is written (docs/architecture.md, "Lock order and faults").
 */

/** How the registration found its person. */
export type PersonKind = 'new' | 'returning' | 'joined'

export interface PersonFound {
  userId: string
  /** The messenger identity the new session belongs to. */
  identityId: string
  /**
   * `new`: a new person (`user.created`); `returning`: an identity campusgate knew; `joined`: a new
   * identity of a person it knew by the unionid they share (IDENTITY_LINK_BY_UNIONID).
   */
  person: PersonKind
  /**
   * People the login's unionid would have joined this one with, had they not been people of their
   * own already (never merged: audited as `identity-conflict`), each with their first openId.
   */
  conflicts: { userId: string; openId: string }[]
}

/** How many holders of one unionid are enough to know it is more than one. */
const ONE_TOO_MANY = 2

/**
 * The person of `login`: found, joined or created. `userId` and `identityId` are the ids a new
 * person and a new identity take. One read decides the common cases (findLoginCandidates).
 */
export async function findPerson(
  trx: Queryable,
  args: {
    userId: string
    identityId: string
    login: MessengerLogin
    linkByUnionId: boolean
    now: number
  },
): Promise<PersonFound> {
  const { login, now } = args
  let found = await findLoginCandidates(trx, login)
  if (found.known !== null) return returning(trx, found.known, found, args)

  // Moved from before apps were recorded: the first login from an app claims the openId's identity.
  if (found.unknownApp !== null) {
    await lockUser(trx, found.unknownApp.userId)
    if (await claimUnknownApp(trx, found.unknownApp.id, login.appId, now)) {
      return returning(trx, found.unknownApp, found, args)
    }
    return findPerson(trx, args)
  }

  let conflicts: PersonFound['conflicts'] = []
  if (args.linkByUnionId && login.unionId !== null) {
    // Two first logins with one unionid, at once, would each find no holder: one waits here, and
    // then reads what the other committed.
    if (await lockName(trx, `unionid\n${login.platform}\n${login.unionId}`)) {
      found = await findLoginCandidates(trx, login)
      if (found.known !== null || found.unknownApp !== null) return findPerson(trx, args)
    }
    const holders = found.complete
      ? found.holders
      : await findHoldersOfUnionId(trx, login.platform, login.unionId, ONE_TOO_MANY)
    const [holder] = holders
    if (holders.length === 1 && holder !== undefined) {
      await lockUser(trx, holder)
      const added = await insertMessengerIdentity(
        trx,
        { id: args.identityId, userId: holder, ...login },
        now,
      )
      // Null: the same identity was made meanwhile, and is now known.
      if (added === null) return findPerson(trx, args)
      return { userId: holder, identityId: added.id, person: 'joined', conflicts }
    }
    conflicts = await withOpenIds(trx, holders.slice(0, ONE_TOO_MANY + 1))
  }

  await insertUser(trx, args.userId, now)
  const added = await insertMessengerIdentity(
    trx,
    { id: args.identityId, userId: args.userId, ...login },
    now,
  )
  if (added === null) {
    await deleteUser(trx, args.userId)
    return findPerson(trx, args)
  }
  return { userId: args.userId, identityId: added.id, person: 'new', conflicts }
}

/**
 * A login of an identity campusgate knows: its person, with the platform's new session key kept.
 * A unionid that arrives (or changes) is stored; another person holding it already is reported,
 * never merged.
 */
async function returning(
  trx: Queryable,
  known: MessengerIdentityRef,
  found: LoginCandidates,
  { login, linkByUnionId, now }: { login: MessengerLogin; linkByUnionId: boolean; now: number },
): Promise<PersonFound> {
  await lockUser(trx, known.userId)
  await refreshMessengerIdentity(trx, known.id, login, now)
  let conflicts: PersonFound['conflicts'] = []
  if (linkByUnionId && login.unionId !== null && login.unionId !== known.unionId) {
    const holders = found.complete
      ? found.holders
      : await findHoldersOfUnionId(trx, login.platform, login.unionId, ONE_TOO_MANY + 1)
    conflicts = await withOpenIds(
      trx,
      holders.filter((holder) => holder !== known.userId),
    )
  }
  return { userId: known.userId, identityId: known.id, person: 'returning', conflicts }
}

async function withOpenIds(
  trx: Queryable,
  userIds: readonly string[],
): Promise<PersonFound['conflicts']> {
  const named: PersonFound['conflicts'] = []
  for (const userId of userIds)
    named.push({ userId, openId: (await firstOpenIdOf(trx, userId)) ?? '' })
  return named
}

/**
 * Who a person's own events name (a link, an erasure; docs/webhooks.md): their first openId, and
 * whether they hold a university link. Null when there is no such person.
 */
export async function whoIs(
  trx: Queryable,
  userId: string,
): Promise<{ userId: string; openId: string; linked: boolean } | null> {
  const openId = await firstOpenIdOf(trx, userId)
  if (openId === null) return null
  return { userId, openId, linked: await hasUniversityLink(trx, userId) }
}
