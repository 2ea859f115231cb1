import { createHash, timingSafeEqual } from 'node:crypto'
import type { FastifyInstance, FastifyReply, onRequestHookHandler } from 'fastify'
import type { BackendsConfig } from '../config.js'
import { errorResponses } from '../http/schemas.js'
import { MAX_SECRET_LENGTH } from '../lib/secrets.js'
import type { Session, Sessions } from './service.js'

// OAuth 2.0 Token Introspection (RFC 7662) for the app's backends: docs/tier-guard.md,
// "From another backend". The one route whose answers are not the v1 media type: a resource
// server's OAuth library expects the RFC's `application/json` and its error names.

export interface IntrospectionOptions {
  /** The key check of GET /session: the same lookup, and a check extends the key's validity. */
  sessions: Pick<Sessions, 'validate'>
  /** BACKEND_CREDENTIALS: the backends that may ask. */
  credentials: BackendsConfig['credentials']
}

const JSON_TYPE = 'application/json'

/** RFC 6749 §5.2 names, in the RFC's `{ error }` body. */
const INVALID_CLIENT = { error: 'invalid_client' } as const
const INVALID_REQUEST = { error: 'invalid_request' } as const

const digest = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest()

/** An id and a secret of the longest length, each character percent-encoded, and the colon. */
const MAX_ENCODED_CREDENTIAL = 3 * (2 * MAX_SECRET_LENGTH) + 1
/** Its base64 length: the longest Basic header worth decoding. */
const MAX_BASIC_LENGTH = 4 * Math.ceil(MAX_ENCODED_CREDENTIAL / 3)
const BASIC = new RegExp(`^basic\\s+([A-Za-z0-9+/=._~-]{1,${MAX_BASIC_LENGTH}})\\s*$`, 'i')

/**
 * RFC 6749 §2.3.1: the client id and secret are form-encoded before Basic authentication, so a
 * backend's library may send `~` as `%7E` (and a space as `+`). Null for a malformed escape.
 */
function formDecoded(value: string): string | null {
  try {
    return decodeURIComponent(value.replaceAll('+', ' '))
  } catch {
    return null
  }
}

/**
 * Checks `Authorization: Basic` against every configured backend: each comparison over equal-length
 * digests, and every backend compared whatever matched, so the time taken tells nothing of which
 * id exists or how much of a secret was right. The id and secret are form-decoded first
 * (docs/tier-guard.md, "POST /introspect (token introspection, RFC 7662)").
 */
function credentialCheck(credentials: BackendsConfig['credentials']) {
  const known = [...credentials].map(([id, secret]) => ({
    id,
    idDigest: digest(id),
    secretDigest: digest(secret),
  }))
  return (header: string | undefined): string | null => {
    const match = BASIC.exec(header ?? '')
    if (match === null) return null
    const decoded = Buffer.from(match[1], 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    if (colon < 0 || decoded.length > MAX_ENCODED_CREDENTIAL) return null
    const idText = formDecoded(decoded.slice(0, colon))
    const secretText = formDecoded(decoded.slice(colon + 1))
    if (idText === null || secretText === null) return null
    const id = digest(idText)
    const secret = digest(secretText)
    let found: string | null = null
    for (const backend of known) {
      const idMatches = timingSafeEqual(id, backend.idDigest)
      const secretMatches = timingSafeEqual(secret, backend.secretDigest)
      if (idMatches && secretMatches) found = backend.id
    }
    return found
  }
}

/**
 * The form's fields, in one pass over the body. A field sent more than once becomes a list, which
 * the body schema refuses (RFC 6749 §3.1: a parameter is sent once). The list keeps the field's
 * first two values, all the refusal needs, so a body that repeats a field thousands of times costs
 * one step per field like any other (docs/tier-guard.md, "POST /introspect (token introspection,
 * RFC 7662)").
 */
export function formFields(body: string): Record<string, string | string[]> {
  const fields = Object.create(null) as Record<string, string | string[]>
  for (const [name, value] of new URLSearchParams(body)) {
    const before = fields[name]
    if (before === undefined) fields[name] = value
    else if (typeof before === 'string') fields[name] = [before, value]
  }
  return fields
}

/** RFC 7662 §2.2: what the backend learns of an active key; every time in seconds. */
function activeAnswer(session: Session) {
  const { university } = session
  return {
    active: true as const,
    sub: session.userId,
    openId: session.openId,
    ...(session.appId === null ? {} : { appId: session.appId }),
    platform: session.platform,
    tier: session.tier,
    sid: session.id,
    exp: Math.floor(session.expiresAt.getTime() / 1000),
    iat: Math.floor(session.createdAt.getTime() / 1000),
    ...(university === undefined
      ? {}
      : { university: { ...university, linkedAt: university.linkedAt.toISOString() } }),
  }
}

function refuseClient(reply: FastifyReply): FastifyReply {
  // RFC 6749 §5.2: a 401 names the scheme the client should have used; the challenge is the bare
  // scheme the docs name (docs/tier-guard.md), which every HTTP client reads as Basic.
  return reply.code(401).header('www-authenticate', 'Basic').type(JSON_TYPE).send(INVALID_CLIENT)
}

/**
 * `POST /introspect`. Registered only when BACKEND_CREDENTIALS names a backend (otherwise the path
 * is an unknown endpoint like any other), in its own context: it reads form bodies, which no other
 * route takes.
 */
export async function introspectionRoutes(
  app: FastifyInstance,
  { sessions, credentials }: IntrospectionOptions,
): Promise<void> {
  const backendOf = credentialCheck(credentials)

  // RFC 7662 §2.1: `application/x-www-form-urlencoded`. Any other body is read and dropped, so the
  // answer is the RFC's invalid_request, not the v1 interface's JSON-only 415.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string' },
    (_request, body: string, done) => done(null, formFields(body)),
  )
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, _body, done) =>
    done(null, undefined),
  )

  /**
   * The credential first, before the body is read. A request that carries one that checks out
   * counts against that backend's limit; any other against its address, as a wrong session key does.
   */
  const authenticateBackend: onRequestHookHandler = (request, reply, done) => {
    const backend = backendOf(request.headers.authorization)
    if (backend === null) {
      return app.countChecked(request, null, (refusal) => {
        if (refusal !== undefined) return done(refusal)
        request.log.info({ event: 'introspection-refused' }, 'no valid backend credential')
        void refuseClient(reply)
      })
    }
    app.countBackend(request, backend, done)
  }

  app.post<{ Body: { token: string } }>(
    '/introspect',
    {
      onRequest: authenticateBackend,
      // A body without one `token` is the RFC's invalid_request, not the v1 missing-required-keys.
      attachValidation: true,
      config: { versionedMediaType: false },
      schema: {
        operationId: 'introspectSessionKey',
        summary: 'A backend asks about a session key (RFC 7662 token introspection)',
        description:
          "For the app's backends named in `BACKEND_CREDENTIALS`, with HTTP Basic authentication. " +
          'Answers are `application/json` as the RFC has them, the one exception to the v1 media ' +
          'type. A check is a use of the key (it extends its validity as `GET /session` does) and ' +
          "counts against the backend's own rate limit (`RATE_LIMIT_PER_BACKEND`), not the key's " +
          "or the address's. Served only when `BACKEND_CREDENTIALS` is set.",
        tags: ['sessions'],
        security: [{ backendCredentials: [] }],
        consumes: ['application/x-www-form-urlencoded'],
        body: {
          type: 'object',
          required: ['token'],
          properties: {
            token: { type: 'string', minLength: 1, description: 'The session key asked about.' },
            token_type_hint: {
              type: 'string',
              description: 'Ignored: there is one kind of token.',
            },
          },
        },
        response: introspectionResponses(),
      },
    },
    async (request, reply) => {
      if (request.validationError !== undefined) {
        return reply.code(400).type(JSON_TYPE).send(INVALID_REQUEST)
      }
      const { token } = request.body
      const session = token.length > MAX_SECRET_LENGTH ? null : await sessions.validate(token)
      return reply
        .code(200)
        .type(JSON_TYPE)
        .send(session === null ? { active: false } : activeAnswer(session))
    },
  )
}

/** The route's answers for the OpenAPI document (and the serializer): the RFC's, then the v1 rows. */
function introspectionResponses(): Record<string, unknown> {
  const rows = errorResponses('bodyTooLarge') as Record<
    string,
    { description: string; content: Record<string, unknown> }
  >
  // Never the 406: the route answers whatever the client accepts.
  delete rows['406']
  const universitySchema = {
    type: 'object',
    required: ['linkedAt'],
    properties: {
      subject: { type: 'string' },
      email: { type: 'string' },
      name: { type: 'string' },
      isStudent: { type: 'boolean' },
      linkedAt: { type: 'string', format: 'date-time' },
    },
    additionalProperties: false,
  }
  const rfcError = (code: string) => ({
    type: 'object',
    required: ['error'],
    properties: { error: { type: 'string', enum: [code] } },
  })
  const malformed = rows['400']
  return {
    ...rows,
    200: {
      description:
        '`{ "active": false }` for an unknown, ended or expired key; otherwise who it belongs to. ' +
        '`exp` and `iat` are seconds since the epoch (expiry, registration).',
      content: {
        [JSON_TYPE]: {
          schema: {
            type: 'object',
            required: ['active'],
            properties: {
              active: { type: 'boolean' },
              sub: {
                type: 'string',
                description:
                  "campusgate's id of the person: the same for every app and platform they register from.",
              },
              openId: {
                type: 'string',
                description: 'The openId of the identity the key was registered with.',
              },
              appId: {
                type: 'string',
                description: 'Its app; absent for a key from before apps were recorded.',
              },
              platform: { type: 'string', description: 'Its messenger platform.' },
              tier: { type: 'string', enum: ['messenger-registered', 'university-registered'] },
              sid: { type: 'string', description: 'The session id.' },
              exp: { type: 'integer' },
              iat: { type: 'integer' },
              university: universitySchema,
            },
          },
        },
      },
    },
    400: {
      description: `invalid_request (no single \`token\` parameter) | ${malformed.description}`,
      content: { [JSON_TYPE]: { schema: rfcError('invalid_request') }, ...malformed.content },
    },
    401: {
      description: 'invalid_client: no `Authorization: Basic` credential of a configured backend.',
      headers: {
        'www-authenticate': { type: 'string', description: 'The scheme to use: Basic.' },
      },
      content: { [JSON_TYPE]: { schema: rfcError('invalid_client') } },
    },
  }
}
