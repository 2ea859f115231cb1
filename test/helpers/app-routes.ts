import type { FastifyInstance } from 'fastify'
import { EMPTY_OBJECT, errorResponses, jsonResponse } from '../../src/http/schemas.js'

/**
 * `GET /forum`: one of the app's own routes behind the tier guard (tier 2), documented as
 * docs/tier-guard.md shows, so the OpenAPI checks see it like campusgate's routes.
 */
export function addForumRoute(app: FastifyInstance): void {
  app.get(
    '/forum',
    {
      onRequest: app.requireTier('university-registered'),
      schema: {
        response: {
          200: jsonResponse('The forum.', EMPTY_OBJECT),
          ...errorResponses(
            'missingAuthorizationHeader',
            'invalidSessionKey',
            'insufficientRegistrationTier',
          ),
        },
      },
    },
    () => ({}),
  )
}
