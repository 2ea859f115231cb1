import type { FastifyInstance } from 'fastify'
import { fromRequest } from '../../audit/audit.js'
import { errorResponses, jsonResponse } from '../../http/schemas.js'
import type { SessionRoutesOptions } from './options.js'

const requiredString = { type: 'string', minLength: 1 } as const

/** POST /register/messenger: tier 1 (docs/sessions.md, "Registering"). */
export function registerRoute(
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
            'userSuspended',
            'messengerPlatformUnavailable',
          ),
        },
      },
    },
    async (request) => {
      const { appId, appSecret, code } = request.body
      const identity = await messenger.code2session(appId, appSecret, code)
      const { sessionKey, expiresAt } = await sessions.register(
        identity,
        fromRequest(request.ip),
        request.headers['user-agent'],
      )
      return { sessionKey, expiresAt: expiresAt.toISOString() }
    },
  )
}
