import type { FastifyInstance } from 'fastify'
import { fromRequest } from '../../audit/audit.js'
import { errorResponses, jsonResponse } from '../../http/schemas.js'
import type { SessionRoutesOptions } from './options.js'

const requiredString = { type: 'string', minLength: 1 } as const
/** The longest device name an app may give (docs/sessions.md, "Devices"). */
const MAX_DEVICE_NAME = 64

/** POST /register/messenger: tier 1 (docs/sessions.md, "Registering"). */
export function registerRoute(
  app: FastifyInstance,
  { sessions, messenger }: SessionRoutesOptions,
): void {
  app.post<{ Body: { appId: string; appSecret: string; code: string; device?: string } }>(
    '/register/messenger',
    {
      onRequest: app.limitSensitive,
      config: { invalidFieldErrors: { '/device': 'invalidValue' } },
      schema: {
        operationId: 'registerMessenger',
        summary: 'Tier 1: register with a messenger login code',
        // No session key: the route is open to anyone.
        security: [],
        tags: ['registration'],
        body: {
          type: 'object',
          required: ['appId', 'appSecret', 'code'],
          properties: {
            appId: requiredString,
            appSecret: requiredString,
            code: requiredString,
            device: {
              type: 'string',
              maxLength: MAX_DEVICE_NAME,
              description:
                "The device's name as the app calls it (e.g. “Ada's phone”): the session's device " +
                'label instead of the `User-Agent` (empty: none given) (docs/sessions.md, "Devices").',
            },
          },
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
            'invalidValue',
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
      const { appId, appSecret, code, device } = request.body
      const identity = await messenger.code2session(appId, appSecret, code)
      const { sessionKey, expiresAt } = await sessions.register(
        identity,
        fromRequest(request.ip),
        // An empty name is no name.
        device === undefined || device === '' ? request.headers['user-agent'] : device,
      )
      return { sessionKey, expiresAt: expiresAt.toISOString() }
    },
  )
}
