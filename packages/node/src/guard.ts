import { ANSWERS, type Answer } from './answers.js'
import type { Client } from './client.js'
import { isCheckFailure, RateLimitedError, type CheckFailure } from './errors.js'
import { reaches, sessionKeyFrom, type Session, type Tier } from './session.js'

export interface GuardOptions {
  /**
   * Receives the cause of every 503 this guard answers (once per answer, while the client's own
   * `onError` hears each failed check once). What it throws is ignored.
   */
  onError?: (cause: CheckFailure) => void
}

/** A request the guard turns away: what campusgate would answer, for `onRefused`. */
export interface Refusal {
  /** 401, 403, 429 or 503. */
  status: number
  /** campusgate's code, e.g. `@forbidden/insufficient-registration-tier`. */
  error: string
  /** Seconds to wait before trying again (with 429 and 503). */
  retryAfter?: number
}

/** The refusal an answer stands for. */
export function refusalOf(answer: Answer): Refusal {
  const retryAfter = Number(answer.headers['retry-after'])
  return {
    status: answer.status,
    error: answer.body.error,
    ...(Number.isInteger(retryAfter) ? { retryAfter } : {}),
  }
}

/**
 * The tier guard's decision for one request, as campusgate's own guard decides it: the session,
 * or the answer to send instead. Fails closed: no answer from campusgate is a 503.
 */
export async function check(
  client: Client,
  tier: Tier,
  authorization: string | string[] | undefined,
  options: GuardOptions = {},
): Promise<{ session: Session } | { answer: Answer }> {
  const key = sessionKeyFrom(authorization)
  if (key === null) return { answer: ANSWERS.missingAuthorizationHeader() }
  let session: Session | null
  try {
    session = await client.session(key)
  } catch (error) {
    if (error instanceof RateLimitedError) {
      return { answer: ANSWERS.rateLimitExceeded(error.retryAfterSeconds) }
    }
    if (!isCheckFailure(error)) throw error
    try {
      options.onError?.(error)
    } catch {
      // A failing logger must not turn a 503 into something else.
    }
    return { answer: ANSWERS.sessionServiceUnavailable() }
  }
  if (session === null) return { answer: ANSWERS.invalidSessionKey() }
  if (!reaches(session, tier)) return { answer: ANSWERS.insufficientRegistrationTier() }
  return { session }
}
