// The answers the guards give, exactly as campusgate gives them: `{ error }` in the v1 media type
// with campusgate's JSON headers.

export const MEDIA_TYPE = 'application/vnd.service.v1+json'

/** What `Retry-After` says while campusgate cannot answer a key check. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5

export interface Answer {
  status: number
  body: { error: string }
  headers: Record<string, string>
}

const JSON_HEADERS = {
  'content-type': MEDIA_TYPE,
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
}

function answer(status: number, error: string, extra: Record<string, string> = {}): Answer {
  return { status, body: { error }, headers: { ...JSON_HEADERS, ...extra } }
}

export const ANSWERS = {
  missingAuthorizationHeader: () => answer(403, '@forbidden/missing-authorization-header'),
  invalidSessionKey: () => answer(401, '@unauthorized/invalid-session-key'),
  insufficientRegistrationTier: () => answer(403, '@forbidden/insufficient-registration-tier'),
  rateLimitExceeded: (retryAfterSeconds: number) =>
    answer(429, '@too-many-requests/rate-limit-exceeded', {
      'retry-after': String(retryAfterSeconds),
    }),
  sessionServiceUnavailable: () =>
    answer(503, '@service-unavailable/session-service-unavailable', {
      'retry-after': String(UNAVAILABLE_RETRY_AFTER_SECONDS),
    }),
} as const
