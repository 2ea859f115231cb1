import type { FastifyInstance } from 'fastify'
import { fromRequest } from '../audit/audit.js'
import { AppError } from '../errors.js'
import { errorResponses, jsonResponse, EMPTY_OBJECT } from '../http/schemas.js'
import type { MessengerClient } from '../messenger/client.js'
import type { DeviceSession, Sessions } from './service.js'

export interface SessionRoutesOptions {
  sessions: Sessions
  messenger: MessengerClient
}

const requiredString = { type: 'string', minLength: 1 } as const

/** Longer than any id `newId` makes. */
const MAX_SESSION_ID_LENGTH = 64

const EXAMPLE_TIMES = {
  createdAt: '2026-11-02T08:14:03.000Z',
  lastUsedAt: '2026-11-28T07:51:40.000Z',
  expiresAt: '2026-12-28T07:51:40.000Z',
}

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
      const { sessionKey, expiresAt } = await sessions.register(
        identity,
        fromRequest(request.ip),
        request.headers['user-agent'],
      )
      return { sessionKey, expiresAt: expiresAt.toISOString() }
    },
  )

  app.post<{ Querystring: { scope?: 'all' } }>(
    '/logout',
    {
      onRequest: app.requireTier('messenger-registered'),
      schema: {
        operationId: 'logout',
        summary: 'End the session (or every session of the user); the user data stays',
        description:
          'Ends the session of the key sent. The messenger session key and the university token ' +
          "are nullified when that was the user's last live session; another device's session " +
          'keeps its tier. `scope=all` ends every session of the user.',
        tags: ['sessions'],
        security: [{ sessionKey: [] }],
        querystring: {
          type: 'object',
          properties: {
            scope: {
              type: 'string',
              enum: ['all'],
              description: '`all`: end every session of the user, on every device.',
            },
          },
        },
        response: {
          200: jsonResponse('Ended.', EMPTY_OBJECT),
          // A body is not expected, but one that is sent is still parsed.
          ...errorResponses(
            'malformedJson',
            'bodyTooLarge',
            'jsonRequired',
            'invalidValue',
            'missingAuthorizationHeader',
            'invalidSessionKey',
          ),
        },
      },
    },
    async (request) => {
      const session = request.session!
      // A logout racing this one may end the session first; either way it is ended.
      if (request.query.scope === 'all') {
        await sessions.endOwn(session.userId, 'all', fromRequest(request.ip))
      } else {
        await sessions.logout(session.id, fromRequest(request.ip))
      }
      return {}
    },
  )

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
            required: ['sessionId', 'openId', 'tier', 'expiresAt'],
            properties: {
              sessionId: {
                type: 'string',
                description: "The same id as GET /sessions' `id` and the events' `sessionId`.",
              },
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
            examples: [
              {
                sessionId: '3f6c1a0e-52d4-4b8e-9a57-0c7d2e91b4aa',
                openId: 'o6_bmjrPTlm6_2sgVt7hMZOPfL2M',
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
        tier: session.tier,
        expiresAt: session.expiresAt.toISOString(),
        ...(university === undefined
          ? {}
          : { university: { ...university, linkedAt: university.linkedAt.toISOString() } }),
      }
    },
  )
}
