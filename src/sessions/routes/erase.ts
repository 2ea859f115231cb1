import type { FastifyInstance } from 'fastify'
import { fromRequest } from '../../audit/audit.js'
import { EMPTY_OBJECT, errorResponses, jsonResponse } from '../../http/schemas.js'
import type { SessionRoutesOptions } from './options.js'

/** DELETE /user: the person asks to be forgotten (docs/sessions.md, "Erasure"). */
export function eraseRoute(app: FastifyInstance, { sessions }: SessionRoutesOptions): void {
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
}
