import type { FastifyInstance } from 'fastify'
import { fromRequest } from '../audit/audit.js'
import { errorResponses, jsonResponse, EMPTY_OBJECT } from '../http/schemas.js'
import type { MessengerClient } from '../messenger/client.js'
import type { Sessions } from './service.js'

export interface SessionRoutesOptions {
  sessions: Sessions
  messenger: MessengerClient
}

const requiredString = { type: 'string', minLength: 1 } as const

export function sessionRoutes(
  app: FastifyInstance,
  { sessions, messenger }: SessionRoutesOptions,
): void {
  app.post<{ Body: { appId: string; appSecret: string; code: string } }>(
    '/register/messenger',
    {
      onRequest: app.limitSensitive,
      schema: {
        operationId: 'registerMessenger',
        summary: 'Tier 1: register with a messenger login code',
        // No session key: the route is open to anyone.
        security: [],
        tags: ['registration'],
        body: {
          type: 'object',
          required: ['appId', 'appSecret', 'code'],
          properties: { appId: requiredString, appSecret: requiredString, code: requiredString },
        },
        response: {
          200: jsonResponse('Registered; the session key is returned once.', {
            type: 'object',
            required: ['sessionKey', 'expiresAt'],
            properties: {
              sessionKey: { type: 'string' },
              expiresAt: { type: 'string', format: 'date-time' },
            },
          }),
          ...errorResponses(
            'missingRequiredKeys',
            'malformedJson',
            'bodyTooLarge',
            'jsonRequired',
            'failedMessengerAuthentication',
            'messengerPlatformUnavailable',
          ),
        },
      },
    },
    async (request) => {
      const { appId, appSecret, code } = request.body
      const identity = await messenger.code2session(appId, appSecret, code)
      const { sessionKey, expiresAt } = await sessions.register(identity, fromRequest(request.ip))
      return { sessionKey, expiresAt: expiresAt.toISOString() }
    },
  )

  app.post(
    '/logout',
    {
      onRequest: app.requireTier('messenger-registered'),
      schema: {
        operationId: 'logout',
        summary: 'End the session; the user data stays',
        tags: ['sessions'],
        security: [{ sessionKey: [] }],
        response: {
          200: jsonResponse('Session ended.', EMPTY_OBJECT),
          // A body is not expected, but one that is sent is still parsed.
          ...errorResponses(
            'malformedJson',
            'bodyTooLarge',
            'jsonRequired',
            'missingAuthorizationHeader',
            'invalidSessionKey',
          ),
        },
      },
    },
    async (request) => {
      // A logout racing this one may end the session first; either way it is ended.
      await sessions.logout(request.session!.id, fromRequest(request.ip))
      return {}
    },
  )

  app.delete(
    '/user',
    {
      onRequest: [app.limitSensitive, app.requireTier('messenger-registered')],
      schema: {
        operationId: 'eraseUser',
        summary: 'Erase the user: the session ends and campusgate forgets the user',
        tags: ['sessions'],
        security: [{ sessionKey: [] }],
        response: {
          200: jsonResponse('Erased.', EMPTY_OBJECT),
          // A body is not expected, but one that is sent is still parsed.
          ...errorResponses(
            'malformedJson',
            'bodyTooLarge',
            'jsonRequired',
            'missingAuthorizationHeader',
            'invalidSessionKey',
          ),
        },
      },
    },
    async (request) => {
      const { userId, openId } = request.session!
      await sessions.eraseUser({ userId, openId }, fromRequest(request.ip))
      return {}
    },
  )

  app.get(
    '/session',
    {
      onRequest: app.requireTier('messenger-registered'),
      schema: {
        operationId: 'getSession',
        summary: 'Who a session key belongs to',
        tags: ['sessions'],
        security: [{ sessionKey: [] }],
        response: {
          200: jsonResponse('The session behind the key.', {
            type: 'object',
            required: ['openId', 'tier', 'expiresAt'],
            properties: {
              openId: { type: 'string' },
              tier: { type: 'string', enum: ['messenger-registered', 'university-registered'] },
              expiresAt: { type: 'string', format: 'date-time' },
              university: {
                description:
                  'At `university-registered` only: the university account that proved it. ' +
                  'Fields the provider did not give are absent.',
                type: 'object',
                required: ['linkedAt'],
                properties: {
                  subject: {
                    type: 'string',
                    description:
                      'Stable at the provider: UCL-API `upi`, or OpenID Connect `sub` (of the configured issuer).',
                  },
                  email: { type: 'string' },
                  name: { type: 'string' },
                  isStudent: { type: 'boolean' },
                  linkedAt: { type: 'string', format: 'date-time' },
                },
                additionalProperties: false,
              },
            },
          }),
          ...errorResponses('missingAuthorizationHeader', 'invalidSessionKey'),
        },
      },
    },
    async (request) => {
      const session = request.session!
      const university = session.university
      return {
        openId: session.openId,
        tier: session.tier,
        expiresAt: session.expiresAt.toISOString(),
        ...(university === undefined
          ? {}
          : { university: { ...university, linkedAt: university.linkedAt.toISOString() } }),
      }
    },
  )
}
