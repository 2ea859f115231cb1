import { AppError } from '../errors.js'
import type { Queryable } from '../db/schema.js'
import { countMailSince, type MailWindow } from './outbox.js'

export interface MailLimits {
  readonly perUser: number
  readonly perRecipient: number
  readonly windowMs: number
}

function retryAfterSeconds(window: MailWindow, windowMs: number, now: number): number {
  const frees = (window.oldestAt ?? now) + windowMs
  return Math.max(1, Math.ceil((frees - now) / 1000))
}

/**
 * MAIL_LIMIT_PER_USER and MAIL_LIMIT_PER_RECIPIENT: a tier-1 session cannot turn campusgate into a
 * mail cannon, against one address or many. Over either cap: 429 with `Retry-After` (when the
 * oldest counted mail leaves the window), and the caller's transaction queues nothing.
 */
export async function enforceMailLimits(
  trx: Queryable,
  limits: MailLimits,
  userId: string,
  recipient: string,
  now: number,
): Promise<void> {
  const since = now - limits.windowMs
  const ofUser = await countMailSince(trx, { userId }, since)
  if (ofUser.count >= limits.perUser) {
    throw new AppError('rateLimitExceeded', {
      retryAfterSeconds: retryAfterSeconds(ofUser, limits.windowMs, now),
    })
  }
  const toRecipient = await countMailSince(trx, { recipient }, since)
  if (toRecipient.count >= limits.perRecipient) {
    throw new AppError('rateLimitExceeded', {
      retryAfterSeconds: retryAfterSeconds(toRecipient, limits.windowMs, now),
    })
  }
}
