import { latestEventTimes } from '../audit/store.js'
import type { Queryable } from '../db/schema.js'
import type { SessionStore, SessionVersion } from '../sessions/store.js'
import { findWechatPeople, type WechatPersonVersion } from '../identities/store.js'

// The import's planner: what `campusgate import-original` would do with each user of the
// original server, read only (the import itself is `import.ts`; `--dry-run` stops here).

/** A live user of the original server, ready to be stored (docs/migrating-from-original.md). */
export interface OriginalUser {
  openId: string
  /** The messenger session key, encrypted. */
  messengerSessionKey: string
  /** SHA-256 of the original's session key, exactly as campusgate hashes its own keys. */
  keyHash: string
  /** When the original last saw the key (never later than the import's now). */
  lastUsed: number
  /** `lastUsed` + SESSION_TTL. */
  expiresAt: number
  /** Fresh ids for the rows this may create. */
  userId: string
  identityId: string
  sessionId: string
}

/**
 * What the import does with one user of the original:
 * - `import`: campusgate does not know the user: it is created with its session.
 * - `extend`: campusgate holds the same key, live, with an earlier expiry than the original's.
 * - `replace`: campusgate does not hold this key, and wrote the user before the original last saw
 *   it: the original's key is the newer (issued there after an earlier import). It replaces the
 *   user's session, as the original's one key per user did.
 * - `present`: campusgate already holds this key, or something newer: nothing changes.
 */
export type ImportDecision = 'import' | 'extend' | 'replace' | 'present'

export interface ImportPlan {
  user: OriginalUser
  decision: ImportDecision
  /** The person campusgate knows by this WeChat openId (in any app), if any. */
  existing: WechatPersonVersion | null
  /** The user's session with the original's key, if campusgate holds it. */
  session: SessionVersion | null
}

function decideImport(
  user: OriginalUser,
  /** The person campusgate knows by this WeChat openId (in any app), if any. */
  existing: WechatPersonVersion | null,
  session: SessionVersion | null,
  erasedAt: number | undefined,
  now: number,
): ImportDecision {
  // A user erased in campusgate after the original last issued its key is not brought back; the
  // trail remembers erasures (openId only) for AUDIT_RETENTION.
  if (existing === null)
    return erasedAt !== undefined && erasedAt >= user.lastUsed ? 'present' : 'import'
  if (session !== null && session.keyHash === user.keyHash) {
    // A session campusgate has let expire is never brought back.
    return session.expiresAt > now && user.expiresAt > session.expiresAt ? 'extend' : 'present'
  }
  // A logout, rotation, erasure or link in campusgate after the original last saw the key wins.
  return user.lastUsed > existing.updatedAt ? 'replace' : 'present'
}

/** Decides, reading only, what `importOriginalUsers` would do with each user (`--dry-run` too). */
export async function planOriginalImport(
  db: Queryable,
  store: SessionStore,
  users: readonly OriginalUser[],
  now: number,
): Promise<ImportPlan[]> {
  const existing = new Map(
    (
      await findWechatPeople(
        db,
        users.map((user) => user.openId),
      )
    ).map((row) => [row.openId, row]),
  )
  // By key: a user may hold several sessions, and the original's key is one of them or none.
  const sessions = new Map(
    (
      await store.versions(
        db,
        [...existing.values()].map((row) => row.userId),
      )
    ).map((row) => [row.keyHash, row]),
  )
  const absent = users.filter((user) => !existing.has(user.openId)).map((user) => user.openId)
  const erased = await latestEventTimes(db, 'erasure', absent)
  return users.map((user) => {
    const found = existing.get(user.openId) ?? null
    const held = sessions.get(user.keyHash)
    const session = found !== null && held?.userId === found.userId ? held : null
    const erasedAt = erased.get(user.openId)
    return {
      user,
      existing: found,
      session,
      decision: decideImport(user, found, session, erasedAt, now),
    }
  })
}
