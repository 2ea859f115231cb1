import type { FastifyInstance } from 'fastify'
import { fromRequest } from '../audit/audit.js'
import { errorResponses, jsonResponse } from '../http/schemas.js'
import { AppError } from '../errors.js'
import type { AccessRequests } from './access.js'

const time = { type: 'string', format: 'date-time' } as const
const nullableTime = { type: ['string', 'null'], format: 'date-time' } as const
const text = { type: 'string' } as const
const nullableText = { type: ['string', 'null'] } as const
const anyObject = { type: 'object', additionalProperties: true } as const

function object(properties: Record<string, unknown>, nullable = false) {
  return {
    type: nullable ? ['object', 'null'] : 'object',
    required: Object.keys(properties),
    additionalProperties: false,
    properties,
  }
}

const list = (item: Record<string, unknown>) => ({ type: 'array', items: object(item) })

/** The access document's shape (accounts/access.ts), for the serializer and the OpenAPI document. */
const ACCESS_DOCUMENT = object({
  exportedAt: time,
  user: object({
    id: text,
    openId: text,
    unionId: nullableText,
    createdAt: time,
    updatedAt: time,
    messengerSessionKeyHeld: { type: 'boolean' },
    suspended: object({ since: time, reason: nullableText }, true),
  }),
  university: object(
    {
      subject: nullableText,
      issuer: nullableText,
      email: nullableText,
      name: nullableText,
      isStudent: { type: ['boolean', 'null'] },
      linkedAt: nullableTime,
      tokenHeld: { type: 'boolean' },
    },
    true,
  ),
  sessions: list({
    id: text,
    createdAt: time,
    lastUsedAt: time,
    expiresAt: time,
    device: nullableText,
  }),
  activeDays: { type: 'array', items: { type: 'string', format: 'date' } },
  registrationCodes: list({ createdAt: time, expiresAt: time }),
  universityAttempts: list({
    status: text,
    createdAt: time,
    expiresAt: time,
    finishedAt: nullableTime,
  }),
  mail: list({
    id: text,
    to: text,
    subject: text,
    state: { type: 'string', enum: ['queued', 'sent', 'abandoned'] },
    queuedAt: time,
    sentAt: nullableTime,
    abandonedAt: nullableTime,
    attempts: { type: 'integer' },
    lastError: nullableText,
  }),
  audit: list({
    at: time,
    type: text,
    actor: text,
    ip: nullableText,
    detail: { ...anyObject, type: ['object', 'null'] },
  }),
  events: list({
    id: text,
    type: text,
    createdAt: time,
    data: anyObject,
    deliveries: list({
      endpoint: text,
      state: { type: 'string', enum: ['pending', 'delivered', 'dead'] },
      finishedAt: nullableTime,
    }),
  }),
  next: object({ before: text }, true),
})

/** `GET /user/data`: the caller's own access request (docs/console.md, "Access requests"). */
export function accessRoutes(app: FastifyInstance, { access }: { access: AccessRequests }): void {
  app.get<{ Querystring: { before?: string } }>(
    '/user/data',
    {
      onRequest: app.requireTier('messenger-registered'),
      schema: {
        operationId: 'getUserData',
        summary: 'Everything campusgate holds about the caller (right of access)',
        description:
          'The user, its university identity, live sessions, active days, registration codes ' +
          'and attempts (times only), mail (no body or link), audit trail and lifecycle events. ' +
          'No key, code, cookie, token or messenger session key: where one is held, the ' +
          'document says so (`messengerSessionKeyHeld`, `tokenHeld`). A history of more than ' +
          'about 4 MB is paged: `audit` and `events` then hold its newest part, and `next.before` ' +
          'is the cursor of the page with the older rest (`?before=`); `next` is null on the last.',
        tags: ['sessions'],
        security: [{ sessionKey: [] }],
        querystring: {
          type: 'object',
          properties: {
            before: {
              type: 'string',
              pattern: '^[A-Za-z0-9_-]{1,400}$',
              description: 'A cursor from `next.before`: the page of the history older than it.',
            },
          },
        },
        response: {
          200: jsonResponse('The access document.', ACCESS_DOCUMENT),
          ...errorResponses('invalidValue', 'missingAuthorizationHeader', 'invalidSessionKey'),
        },
      },
    },
    async (request) => {
      const before = request.query.before ?? null
      if (before !== null && !access.isCursor(before)) throw new AppError('invalidValue')
      const document = await access.export(
        { userId: request.session!.userId },
        fromRequest(request.ip),
        { before },
      )
      // The session was valid a moment ago; only an erasure in between finds no user.
      if (document === null) throw new Error('the caller has no user row')
      return document
    },
  )
}
