import { ANSWERS, type Answer } from './answers.js'
import { RateLimitedError, SessionServiceUnavailableError, type Client } from './client.js'
import { reaches, sessionKeyFrom, type Session, type Tier } from './session.js'

/**
 * The tier guard's decision for one request, as campusgate's own guard decides it: the session,
 * or the answer to send instead. Fails closed: no answer from campusgate is a 503.
 */
export async function check(
  client: Client,
  tier: Tier,
  authorization: string | string[] | undefined,
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
    if (!(error instanceof SessionServiceUnavailableError)) throw error
    return { answer: ANSWERS.sessionServiceUnavailable() }
  }
  if (session === null) return { answer: ANSWERS.invalidSessionKey() }
  if (!reaches(session, tier)) return { answer: ANSWERS.insufficientRegistrationTier() }
  return { session }
}
