import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AppError, type ErrorName } from '../errors.js'
import { MEDIA_TYPE } from './media-type.js'

// Keywords that mean "the key is not there as a non-empty string" (SPEC "Wire interface").
const MISSING_KEYWORDS = new Set(['required', 'type', 'minLength'])

/** Maps a Fastify schema-validation failure onto the seed's error vocabulary. */
function validationKind(error: FastifyError): ErrorName {
  if (error.validationContext === 'querystring') return 'missingRequiredQueryParameters'
  const first = error.validation?.[0]
  if (first && !MISSING_KEYWORDS.has(first.keyword) && first.instancePath === '/email') {
    return 'invalidEmail'
  }
  return 'missingRequiredKeys'
}

const FASTIFY_CODES: Readonly<Record<string, ErrorName>> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'jsonRequired',
  FST_ERR_CTP_BODY_TOO_LARGE: 'bodyTooLarge',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'malformedJson',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'malformedJson',
}

function toAppError(error: unknown): AppError | null {
  if (error instanceof AppError) return error
  const fastifyError = error as Partial<FastifyError>
  if (fastifyError.validation) return new AppError(validationKind(fastifyError as FastifyError))
  const mapped = fastifyError.code === undefined ? undefined : FASTIFY_CODES[fastifyError.code]
  return mapped === undefined ? null : new AppError(mapped, { cause: error })
}

/** Sends `{ error }` for a row of the error table; the only place error responses are made. */
export function sendError(reply: FastifyReply, error: AppError): FastifyReply {
  if (error.retryAfterSeconds !== undefined) {
    reply.header('retry-after', String(error.retryAfterSeconds))
  }
  return reply.code(error.status).type(MEDIA_TYPE).send({ error: error.code })
}

/** Installs the one error handler and the unknown-endpoint handler. */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: unknown, request: FastifyRequest, reply: FastifyReply) => {
    const known = toAppError(error)
    if (known === null) {
      // Unexpected: log everything server-side, answer with no detail.
      request.log.error({ err: error }, 'unexpected error')
      return sendError(reply, new AppError('unexpectedError', { cause: error }))
    }
    if (known.status >= 500) {
      request.log.error({ err: known.cause ?? known }, known.code)
    }
    return sendError(reply, known)
  })

  app.setNotFoundHandler((_request, reply) => sendError(reply, new AppError('unknownEndpoint')))
}
