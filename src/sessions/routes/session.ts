import type { FastifyInstance } from 'fastify'
import { errorResponses, jsonResponse } from '../../http/schemas.js'
import { PLATFORMS } from '../../messenger/platforms/index.js'
import { EXAMPLE_TIMES } from './options.js'

/** GET /session: who a key belongs to. */
export function sessionRoute(app: FastifyInstance): void {
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
            required: ['sessionId', 'openId', 'platform', 'tier', 'expiresAt'],
            properties: {
              sessionId: {
                type: 'string',
                description: "The same id as GET /sessions' `id` and the events' `sessionId`.",
              },
              openId: {
                type: 'string',
                description: 'The openId of the identity the key was registered with.',
              },
              appId: {
                type: 'string',
                description:
                  'The app the key was registered from. Absent for a key from before apps were ' +
                  'recorded, until the person registers from an app again.',
              },
              platform: {
                type: 'string',
                enum: [...PLATFORMS.keys()],
                description: 'The messenger platform of that app (MESSENGER_APP_PLATFORMS).',
              },
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
            examples: [
              {
                sessionId: '3f6c1a0e-52d4-4b8e-9a57-0c7d2e91b4aa',
                openId: 'o6_bmjrPTlm6_2sgVt7hMZOPfL2M',
                appId: 'wx8f3c2a1b9d7e6054',
                platform: 'wechat',
                tier: 'university-registered',
                expiresAt: EXAMPLE_TIMES.expiresAt,
                university: {
                  subject: 'UCLZABC12',
                  email: 'ada.lovelace.24@ucl.ac.uk',
                  name: 'Ada Lovelace',
                  isStudent: true,
                  linkedAt: '2026-11-03T10:02:11.000Z',
                },
              },
            ],
          }),
          ...errorResponses('missingAuthorizationHeader', 'invalidSessionKey'),
        },
      },
    },
    async (request) => {
      const session = request.session!
      const university = session.university
      return {
        sessionId: session.id,
        openId: session.openId,
        ...(session.appId === null ? {} : { appId: session.appId }),
        platform: session.platform,
        tier: session.tier,
        expiresAt: session.expiresAt.toISOString(),
        ...(university === undefined
          ? {}
          : { university: { ...university, linkedAt: university.linkedAt.toISOString() } }),
      }
    },
  )
}
