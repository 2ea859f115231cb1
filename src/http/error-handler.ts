import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AppError, type ErrorName } from '../errors.js'
import { isDatabaseUnavailable } from '../db/failures.js'
import { MEDIA_TYPE } from './media-type.js'

/** What `Retry-After` tells a client while the database cannot be reached. */
const DATABASE_RETRY_AFTER_SECONDS = 5

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The error a route answers when a body field is present but breaks its schema (too long, bad
     * format), by the field's JSON pointer: `{ '/email': 'invalidEmail' }`. Unlisted fields answer
     * `invalidValue`.
     */
    invalidFieldErrors?: Readonly<Record<string, ErrorName>>
    /** Set on the documentation page's routes: their file server's refusals answer 404. */
    documentationAsset?: boolean
  }
}

type ValidationFailure = NonNullable<FastifyError['validation']>[number]

/**
 * "A required key that is absent, null, not a string or empty" (docs/decisions.md, "Wire
 * interface"): `required`, `type`, and the `minLength: 1` that every required string carries.
 */
function isMissing(failure: ValidationFailure): boolean {
  if (failure.keyword === 'required' || failure.keyword === 'type') return true
  return failure.keyword === 'minLength' && failure.params.limit === 1
}

/**
 * A query parameter the route cannot read as given: absent or empty, or repeated (an array where
 * one value is expected) when the route requires it, since no one value of it stands.
 */
function isMissingParameter(failure: ValidationFailure, request: FastifyRequest): boolean {
  if (failure.keyword === 'required') return true
  if (failure.keyword === 'minLength') return failure.params.limit === 1
  if (failure.keyword !== 'type') return false
  const schema = request.routeOptions.schema?.querystring as { required?: unknown } | undefined
  const required = Array.isArray(schema?.required) ? (schema.required as unknown[]) : []
  return required.includes(failure.instancePath.replace(/^\//, ''))
}

/** Maps a Fastify schema-validation failure onto the route's documented error. */
function validationKind(error: FastifyError, request: FastifyRequest): ErrorName {
  const first = error.validation?.[0]
  // A query parameter absent or empty (the emailed link's code); one present with a value the
  // route does not know (`POST /logout?scope=`, or `scope` given twice) is invalid.
  if (error.validationContext === 'querystring') {
    return first === undefined || isMissingParameter(first, request)
      ? 'missingRequiredQueryParameters'
      : 'invalidValue'
  }
  if (first === undefined || isMissing(first)) return 'missingRequiredKeys'
  return request.routeOptions.config.invalidFieldErrors?.[first.instancePath] ?? 'invalidValue'
}

const FASTIFY_CODES: Readonly<Record<string, ErrorName>> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'jsonRequired',
  FST_ERR_CTP_BODY_TOO_LARGE: 'bodyTooLarge',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'malformedJson',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'malformedJson',
  FST_ERR_BAD_URL: 'malformedRequest',
  // A body-carrying method such as QUERY sent without Content-Type.
  FST_ERR_ROUTE_MISSING_CONTENT_TYPE: 'malformedRequest',
}

/** The client went away before its request was complete: its doing, so never an error line. */
function clientAborted(error: unknown, request: FastifyRequest): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return (
    (code === 'ECONNRESET' || code === 'ECONNABORTED') && request.raw.socket?.destroyed !== false
  )
}

function toAppError(error: unknown, request: FastifyRequest): AppError | null {
  if (error instanceof AppError) return error
  const fastifyError = error as Partial<FastifyError>
  if (fastifyError.validation) {
    return new AppError(validationKind(fastifyError as FastifyError, request))
  }
  if (isDatabaseUnavailable(error)) {
    return new AppError('databaseUnavailable', {
      cause: error,
      retryAfterSeconds: DATABASE_RETRY_AFTER_SECONDS,
    })
  }
  const mapped = fastifyError.code === undefined ? undefined : FASTIFY_CODES[fastifyError.code]
  if (mapped !== undefined) return new AppError(mapped, { cause: error })
  return documentationAssetRefusal(error, request) ? new AppError('unknownEndpoint') : null
}

/**
 * The documentation page's file server refusing a request for one of its assets: a path outside
 * its folder, a malformed one, or a precondition or range the file does not meet (its 400, 403,
 * 404, 412, 416). Those assets are not API resources; what cannot be served as asked is answered
 * as a resource campusgate does not have.
 */
function documentationAssetRefusal(error: unknown, request: FastifyRequest): boolean {
  if (request.routeOptions.config.documentationAsset !== true) return false
  const { code, status, statusCode } = error as {
    code?: unknown
    status?: unknown
    statusCode?: unknown
  }
  if (code === 'FST_STATIC_FORBIDDEN_PATH') return true
  const answer = typeof statusCode === 'number' ? statusCode : status
  return typeof answer === 'number' && answer >= 400 && answer < 500
}

/** Sends `{ error }` for a row of the error table; the only place error responses are made. */
export function sendError(reply: FastifyReply, error: AppError): FastifyReply {
  if (error.retryAfterSeconds !== undefined) {
    reply.header('retry-after', String(error.retryAfterSeconds))
  }
  return reply.code(error.status).type(MEDIA_TYPE).send({ error: error.code })
}

/** Refusals of a request's body; a request no route takes is an unknown endpoint whatever its body. */
const BODY_ERRORS: ReadonlySet<ErrorName> = new Set([
  'jsonRequired',
  'malformedJson',
  'bodyTooLarge',
])

/** Installs the one error handler and the unknown-endpoint handler. */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    if (clientAborted(error, request)) {
      request.log.info({ event: 'request-aborted' }, 'client closed the connection mid-request')
      return sendError(reply, new AppError('malformedRequest'))
    }
    const known = toAppError(error, request)
    if (known === null) {
      // Unexpected: log everything server-side, answer with no detail.
      request.log.error({ err: error }, 'unexpected error')
      return sendError(reply, new AppError('unexpectedError', { cause: error }))
    }
    if (request.is404 && BODY_ERRORS.has(known.kind)) {
      return sendError(reply, new AppError('unknownEndpoint'))
    }
    if (known.status >= 500) {
      request.log.error({ err: known.cause ?? known }, known.code)
    }
    return sendError(reply, known)
  })

  app.setNotFoundHandler((_request, reply) => sendError(reply, new AppError('unknownEndpoint')))
}
