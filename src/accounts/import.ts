import type { Queryable } from '../db/schema.js'
import { insertImportedIdentities, UNKNOWN_APP } from '../identities/store.js'
import { deleteUsers, insertUsers, lockUser } from '../users/store.js'
import { planOriginalImport, type ImportDecision, type OriginalUser } from './import-plan.js'
import { emitStarted, registerUser, type SessionPolicy, type StepContext } from './lifecycle.js'

export interface ImportResult {
  openId: string
  userId: string | null
  outcome: ImportDecision
}

/**
 * Coming from the original server: stores its users (distinct openIds) in the caller's
 * transaction. New users and their sessions go in two statements; a user a registration created
 * meanwhile is left as it is. Users campusgate already holds are locked first, then decided again
 * on what the lock guards, and changed only when the original's key is the newer.
 */
export async function importOriginalUsers(
  trx: Queryable,
  {
    users,
    sessions,
    now,
    events,
  }: { users: readonly OriginalUser[]; sessions: SessionPolicy } & StepContext,
): Promise<ImportResult[]> {
  const plans = await planOriginalImport(trx, sessions.store, users, now)
  const results: ImportResult[] = []

  const fresh = plans.filter((plan) => plan.decision === 'import').map((plan) => plan.user)
  // Each a person with a WeChat identity whose app the original never recorded; a person whose
  // identity a registration made meanwhile is not kept.
  await insertUsers(
    trx,
    fresh.map((user) => user.userId),
    now,
  )
  const created = await insertImportedIdentities(
    trx,
    fresh.map((user) => ({
      id: user.identityId,
      userId: user.userId,
      openId: user.openId,
      encryptedSessionKey: user.messengerSessionKey,
    })),
    now,
  )
  await deleteUsers(
    trx,
    fresh.filter((user) => !created.has(user.openId)).map((user) => user.userId),
  )
  // `lastUsed` is also when the expiry was last written, so the first use extends it.
  await sessions.store.create(
    trx,
    fresh
      .filter((user) => created.has(user.openId))
      .map((user) => ({
        id: user.sessionId,
        userId: user.userId,
        identityId: user.identityId,
        keyHash: user.keyHash,
        createdAt: user.lastUsed,
        expiresAt: user.expiresAt,
        touchedAt: user.lastUsed,
        device: null,
      })),
  )
  for (const user of fresh) {
    if (!created.has(user.openId)) {
      results.push({ openId: user.openId, userId: null, outcome: 'present' })
      continue
    }
    results.push({ openId: user.openId, userId: user.userId, outcome: 'import' })
    if (events.enabled) {
      // The app's features learn of an imported user as of a registered one.
      const who = { userId: user.userId, openId: user.openId }
      await events.emit(trx, who, { type: 'user.created' }, now)
      await emitStarted(
        trx,
        events,
        who,
        { id: user.sessionId, expiresAt: user.expiresAt, appId: null, platform: 'wechat' },
        now,
      )
    }
  }

  for (const plan of plans) {
    if (plan.decision === 'import') continue
    if (plan.decision === 'present' || plan.existing === null) {
      results.push({
        openId: plan.user.openId,
        userId: plan.existing?.userId ?? null,
        outcome: 'present',
      })
      continue
    }
    const { userId } = plan.existing
    // Decided again under the user's lock: a request may have changed the user since the plan.
    const again = (await lockUser(trx, userId))
      ? (await planOriginalImport(trx, sessions.store, [plan.user], now))[0]
      : undefined
    if (again?.existing?.userId !== userId || again.decision === 'present') {
      results.push({ openId: plan.user.openId, userId, outcome: 'present' })
      continue
    }
    if (again.decision === 'extend' && again.session !== null) {
      const { id, touchedAt } = again.session
      await sessions.store.extend(trx, id, {
        readTouchedAt: touchedAt,
        now,
        expiresAt: plan.user.expiresAt,
        day: null,
      })
    } else {
      // The original's newer key replaces the imported one, exactly as a registration under the
      // original's rule (one key per user) would: an imported user has one session, as there.
      await registerUser(trx, {
        login: {
          userId: plan.user.userId,
          identityId: plan.user.identityId,
          login: {
            platform: 'wechat',
            appId: again.existing.appId ?? UNKNOWN_APP,
            openId: plan.user.openId,
            unionId: null,
            encryptedSessionKey: plan.user.messengerSessionKey,
          },
        },
        session: {
          id: plan.user.sessionId,
          keyHash: plan.user.keyHash,
          expiresAt: plan.user.expiresAt,
          device: null,
        },
        sessions: { ...sessions, perUser: 1 },
        linkByUnionId: false,
        now,
        events,
      })
    }
    results.push({ openId: plan.user.openId, userId, outcome: again.decision })
  }
  return results
}
