import type { FastifyInstance } from 'fastify'
import { fromRequest } from '../../audit/audit.js'
import { EMPTY_OBJECT, errorResponses, jsonResponse } from '../../http/schemas.js'
import type { SessionRoutesOptions } from './options.js'

/** POST /logout: the session ends, or with `scope=all` every session of the person. */
export function logoutRoute(app: FastifyInstance, { sessions }: SessionRoutesOptions): void {
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
}
