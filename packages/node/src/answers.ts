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

/**
 * The guards' answers: status and code. All but the last are campusgate's own rows (its OpenAPI
 * document lists them; test/wire-contract.test.ts checks); `sessionServiceUnavailable` is the
 * kit's, for when campusgate itself cannot be asked.
 */
export const ERROR_CODES = {
  missingAuthorizationHeader: { status: 403, code: '@forbidden/missing-authorization-header' },
  invalidSessionKey: { status: 401, code: '@unauthorized/invalid-session-key' },
  insufficientRegistrationTier: {
    status: 403,
    code: '@forbidden/insufficient-registration-tier',
  },
  rateLimitExceeded: { status: 429, code: '@too-many-requests/rate-limit-exceeded' },
  sessionServiceUnavailable: {
    status: 503,
    code: '@service-unavailable/session-service-unavailable',
  },
} as const satisfies Record<string, { status: number; code: string }>

const row = (name: keyof typeof ERROR_CODES, extra?: Record<string, string>) =>
  answer(ERROR_CODES[name].status, ERROR_CODES[name].code, extra)

export const ANSWERS = {
  missingAuthorizationHeader: () => row('missingAuthorizationHeader'),
  invalidSessionKey: () => row('invalidSessionKey'),
  insufficientRegistrationTier: () => row('insufficientRegistrationTier'),
  rateLimitExceeded: (retryAfterSeconds: number) =>
    row('rateLimitExceeded', { 'retry-after': String(retryAfterSeconds) }),
  sessionServiceUnavailable: () =>
    row('sessionServiceUnavailable', { 'retry-after': String(UNAVAILABLE_RETRY_AFTER_SECONDS) }),
} as const
