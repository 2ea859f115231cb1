import type { FastifyInstance } from 'fastify'
import { fromRequest } from '../../audit/audit.js'
import { AppError } from '../../errors.js'
import { EMPTY_OBJECT, errorResponses, jsonResponse } from '../../http/schemas.js'
import type { DeviceSession } from '../service.js'
import { EXAMPLE_TIMES, type SessionRoutesOptions } from './options.js'

/** Longer than any id `newId` makes. */
const MAX_SESSION_ID_LENGTH = 64

/** A session of `GET /sessions`, with `current` telling the caller's own. */
const DEVICE_SESSION = {
  type: 'object',
  required: ['id', 'createdAt', 'lastUsedAt', 'expiresAt', 'device', 'current'],
  properties: {
    id: {
      type: 'string',
      description: "The same id as GET /session's `sessionId` and the events' `sessionId`.",
    },
    createdAt: { type: 'string', format: 'date-time' },
    lastUsedAt: {
      type: 'string',
      format: 'date-time',
      description: 'The last use, at the precision of SESSION_TOUCH_INTERVAL.',
    },
    expiresAt: { type: 'string', format: 'date-time' },
    device: {
      type: ['string', 'null'],
      description: 'The `User-Agent` of the request that registered it (at most 256 characters).',
    },
    current: { type: 'boolean', description: 'Whether this is the session of the key sent.' },
  },
  additionalProperties: false,
} as const

function deviceSessionView(session: DeviceSession, currentId: string) {
  return {
    id: session.id,
    createdAt: session.createdAt.toISOString(),
    lastUsedAt: session.lastUsedAt.toISOString(),
    expiresAt: session.expiresAt.toISOString(),
    device: session.device,
    current: session.id === currentId,
  }
}

/** GET /sessions and DELETE /sessions/{id}: the person's devices (docs/sessions.md, "Devices"). */
export function deviceRoutes(app: FastifyInstance, { sessions }: SessionRoutesOptions): void {
  app.get(
    '/sessions',
    {
      onRequest: app.requireTier('messenger-registered'),
      schema: {
        operationId: 'listSessions',
        summary: "The user's live sessions, one per device",
        description:
          'Live sessions only, most recently used first; never a key. `current` marks the session ' +
          'of the key sent.',
        tags: ['sessions'],
        security: [{ sessionKey: [] }],
        response: {
          200: jsonResponse('The live sessions.', {
            type: 'object',
            required: ['sessions'],
            properties: { sessions: { type: 'array', items: DEVICE_SESSION } },
            additionalProperties: false,
            examples: [
              {
                sessions: [
                  {
                    id: '3f6c1a0e-52d4-4b8e-9a57-0c7d2e91b4aa',
                    ...EXAMPLE_TIMES,
                    device:
                      'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) MicroMessenger/8.0.54',
                    current: true,
                  },
                  {
                    id: '9b2d7e44-1c0f-4f6a-8e3b-5a1d0c7f2e19',
                    createdAt: '2026-10-15T12:00:00.000Z',
                    lastUsedAt: '2026-11-27T21:03:12.000Z',
                    expiresAt: '2026-12-27T21:03:12.000Z',
                    device:
                      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) WindowsWechat MiniProgramEnv/Windows',
                    current: false,
                  },
                ],
              },
            ],
          }),
          ...errorResponses('missingAuthorizationHeader', 'invalidSessionKey'),
        },
      },
    },
    async (request) => {
      const session = request.session!
      const live = await sessions.listOfUser(session.userId)
      return { sessions: live.map((one) => deviceSessionView(one, session.id)) }
    },
  )

  app.delete<{ Params: { id: string } }>(
    '/sessions/:id',
    {
      onRequest: app.requireTier('messenger-registered'),
      schema: {
        operationId: 'deleteSession',
        summary: "End one of the user's sessions (another device, or this one)",
        description:
          'Ends it as POST /logout would. 404 `@not-found/unknown-session` for an id that is not ' +
          "a live session of the caller's user.",
        tags: ['sessions'],
        security: [{ sessionKey: [] }],
        params: {
          type: 'object',
          required: ['id'],
          properties: { id: { type: 'string', description: 'A session id of GET /sessions.' } },
        },
        response: {
          200: jsonResponse('Ended.', EMPTY_OBJECT),
          ...errorResponses(
            'malformedJson',
            'bodyTooLarge',
            'jsonRequired',
            'missingAuthorizationHeader',
            'invalidSessionKey',
            'unknownSession',
          ),
        },
      },
    },
    async (request) => {
      const session = request.session!
      const { id } = request.params
      // Ids are short (lib/secrets.ts `newId`): a longer one names no session, and is not looked up.
      const ended =
        id.length > MAX_SESSION_ID_LENGTH
          ? 0
          : await sessions.endOwn(session.userId, { sessionId: id }, fromRequest(request.ip))
      if (ended === 0) throw new AppError('unknownSession')
      return {}
    },
  )
}
