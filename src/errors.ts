/**
 * The one table of error codes campusgate answers with. Every error response is built from a row
 * here by `http/error-handler.ts`, and the OpenAPI document lists the rows each route can produce.
 */
export const ERRORS = {
  missingRequiredKeys: { status: 400, code: '@bad-request/missing-required-keys' },
  invalidEmail: { status: 400, code: '@bad-request/invalid-email' },
  missingRequiredQueryParameters: {
    status: 400,
    code: '@bad-request/missing-required-query-parameters',
  },
  malformedJson: { status: 400, code: '@bad-request/malformed-json' },
  invalidValue: { status: 400, code: '@bad-request/invalid-value' },
  malformedRequest: { status: 400, code: '@bad-request/malformed-request' },
  emailDomainNotAllowed: { status: 400, code: '@bad-request/email-domain-not-allowed' },
  failedMessengerAuthentication: {
    status: 401,
    code: '@unauthorized/failed-messenger-authentication',
  },
  invalidUniversityRegistrationCode: {
    status: 401,
    code: '@unauthorized/invalid-university-registration-code',
  },
  invalidSessionKey: { status: 401, code: '@unauthorized/invalid-session-key' },
  missingAuthorizationHeader: { status: 403, code: '@forbidden/missing-authorization-header' },
  insufficientRegistrationTier: { status: 403, code: '@forbidden/insufficient-registration-tier' },
  operatorRole: { status: 403, code: '@forbidden/operator-role' },
  userSuspended: { status: 403, code: '@forbidden/user-suspended' },
  unknownEndpoint: { status: 404, code: '@not-found/unknown-endpoint' },
  unknownSession: { status: 404, code: '@not-found/unknown-session' },
  unsupportedApiVersion: { status: 406, code: '@not-acceptable/unsupported-api-version' },
  requestTimedOut: { status: 408, code: '@request-timeout/request-timed-out' },
  bodyTooLarge: { status: 413, code: '@payload-too-large/body-too-large' },
  jsonRequired: { status: 415, code: '@unsupported-media-type/json-required' },
  headersTooLarge: {
    status: 431,
    code: '@request-header-fields-too-large/headers-too-large',
  },
  rateLimitExceeded: { status: 429, code: '@too-many-requests/rate-limit-exceeded' },
  unexpectedError: { status: 500, code: '@internal-server-error/unexpected-error' },
  messengerPlatformUnavailable: {
    status: 502,
    code: '@bad-gateway/messenger-platform-unavailable',
  },
  databaseUnavailable: { status: 503, code: '@service-unavailable/database-unavailable' },
  universityProviderUnavailable: {
    status: 502,
    code: '@bad-gateway/university-provider-unavailable',
  },
  invalidMetricsToken: { status: 401, code: '@unauthorized/invalid-metrics-token' },
  notReady: { status: 503, code: '@service-unavailable/not-ready' },
} as const satisfies Record<string, { status: number; code: string }>

export type ErrorName = keyof typeof ERRORS

/** An error with a row in {@link ERRORS}; the error handler turns it into `{ error: code }`. */
export class AppError extends Error {
  /** Seconds to send in `Retry-After`, for rate limiting. */
  readonly retryAfterSeconds: number | undefined

  constructor(
    readonly kind: ErrorName,
    options?: { cause?: unknown; retryAfterSeconds?: number },
  ) {
    super(ERRORS[kind].code, options?.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'AppError'
    this.retryAfterSeconds = options?.retryAfterSeconds
  }

  get status(): number {
    return ERRORS[this.kind].status
  }

  get code(): string {
    return ERRORS[this.kind].code
  }
}
