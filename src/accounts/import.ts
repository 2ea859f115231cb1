import type { Queryable } from '../db/schema.js'
import { insertSessions, touchSession } from '../sessions/store.js'
import { insertUsersIfAbsent, lockUser } from '../users/store.js'
import { planOriginalImport, type ImportDecision, type OriginalUser } from './import-plan.js'
import { emitStarted, registerUser, type StepContext } from './lifecycle.js'

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
  { users, now, events }: { users: readonly OriginalUser[] } & StepContext,
): Promise<ImportResult[]> {
  const plans = await planOriginalImport(trx, users, now)
  const results: ImportResult[] = []

  const fresh = plans.filter((plan) => plan.decision === 'import').map((plan) => plan.user)
  const created = new Set(
    (
      await insertUsersIfAbsent(
        trx,
        fresh.map((user) => ({ ...user, id: user.userId })),
        now,
      )
    ).map((row) => row.openId),
  )
  await insertSessions(
    trx,
    fresh
      .filter((user) => created.has(user.openId))
      .map((user) => ({
        id: user.sessionId,
        userId: user.userId,
        keyHash: user.keyHash,
        createdAt: user.lastUsed,
        expiresAt: user.expiresAt,
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
      await emitStarted(trx, events, who, { id: user.sessionId, expiresAt: user.expiresAt }, now)
    }
  }

  for (const plan of plans) {
    if (plan.decision === 'import') continue
    if (plan.decision === 'present' || plan.existing === null) {
      results.push({
        openId: plan.user.openId,
        userId: plan.existing?.id ?? null,
        outcome: 'present',
      })
      continue
    }
    const userId = plan.existing.id
    // Decided again under the user's lock: a request may have changed the user since the plan.
    const again = (await lockUser(trx, userId))
      ? (await planOriginalImport(trx, [plan.user], now))[0]
      : undefined
    if (again?.existing?.id !== userId || again.decision === 'present') {
      results.push({ openId: plan.user.openId, userId, outcome: 'present' })
      continue
    }
    if (again.decision === 'extend' && again.session !== null) {
      await touchSession(trx, again.session.id, plan.user.expiresAt, now)
    } else {
      // The original's newer key rotates the imported one, exactly as a registration would.
      await registerUser(trx, {
        user: {
          id: plan.user.userId,
          openId: plan.user.openId,
          unionId: null,
          messengerSessionKey: plan.user.messengerSessionKey,
        },
        session: {
          id: plan.user.sessionId,
          keyHash: plan.user.keyHash,
          expiresAt: plan.user.expiresAt,
        },
        now,
        events,
      })
    }
    results.push({ openId: plan.user.openId, userId, outcome: again.decision })
  }
  return results
}
