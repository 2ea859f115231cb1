import { ERRORS, type ErrorName } from '../errors.js'
import { MEDIA_TYPE } from './media-type.js'

type JsonSchema = Record<string, unknown>

/** A response entry in the form both Fastify (serializer by content type) and OpenAPI read. */
export function jsonResponse(description: string, schema: JsonSchema): JsonSchema {
  return { description, content: { [MEDIA_TYPE]: { schema } } }
}

/** An empty JSON object, the success body where the seed shows none. */
export const EMPTY_OBJECT: JsonSchema = {
  type: 'object',
  properties: {},
  additionalProperties: false,
}

/**
 * Response entries for the error rows a route can produce, grouped by status. Every route also
 * gets the rows any request can meet (the protocol edge's 400, 408 and 431; 406, 429, 500, 503), so
 * the document lists them everywhere.
 */
export function errorResponses(...names: ErrorName[]): Record<string, JsonSchema> {
  return responsesFor([
    ...names,
    ...PROTOCOL_EDGE,
    'unsupportedApiVersion',
    'rateLimitExceeded',
    'unexpectedError',
    'databaseUnavailable',
  ])
}

/** What the HTTP layer answers before a request reaches any route: no route can promise otherwise. */
const PROTOCOL_EDGE: readonly ErrorName[] = [
  'malformedRequest',
  'requestTimedOut',
  'headersTooLarge',
]

/**
 * The protocol edge's rows alone, for a route that answers everything else itself (the callback
 * answers 200 whatever it was sent, but a request whose headers cannot be read never reaches it).
 */
export function protocolEdgeResponses(): Record<string, JsonSchema> {
  return responsesFor(PROTOCOL_EDGE)
}

function responsesFor(all: readonly ErrorName[]): Record<string, JsonSchema> {
  const byStatus = new Map<number, string[]>()
  for (const name of all) {
    const { status, code } = ERRORS[name]
    byStatus.set(status, [...(byStatus.get(status) ?? []), code])
  }
  const responses: Record<string, JsonSchema> = {}
  for (const [status, codes] of byStatus) responses[String(status)] = errorBody([...new Set(codes)])
  return responses
}

function errorBody(codes: readonly string[]): JsonSchema {
  return jsonResponse(codes.join(' | '), {
    type: 'object',
    required: ['error'],
    properties: { error: { type: 'string', enum: codes } },
  })
}

/** One error row as a reusable response (for `components.responses`). */
export function errorResponse(name: ErrorName): { description: string } & JsonSchema {
  const { code } = ERRORS[name]
  return { ...errorBody([code]), description: code }
}
