import swagger from '@fastify/swagger'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { errorResponse } from './schemas.js'

/**
 * Builds the OpenAPI 3.1 document from the route schemas; register before any route.
 */
export const openapi = fp(
  async function openapiPlugin(
    app: FastifyInstance,
    options: { version: string; publicBaseUrl: string; metricsToken: boolean },
  ) {
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'campusgate',
          version: options.version,
          description: 'Registration and sessions for a university community mini-program.',
          license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
        },
        servers: [{ url: options.publicBaseUrl }],
        components: {
          responses: {
            // Answered for any method and path that no operation has.
            unknownEndpoint: errorResponse('unknownEndpoint'),
            // The app's own routes answer these rows, which no campusgate operation produces: a
            // route behind requireTier('university-registered') refuses a tier-1 session, and a
            // body field that breaks the route's schema without an error of its own is invalid.
            insufficientRegistrationTier: errorResponse('insufficientRegistrationTier'),
            invalidValue: errorResponse('invalidValue'),
          },
          securitySchemes: {
            sessionKey: {
              type: 'apiKey',
              in: 'header',
              name: 'Authorization',
              description: 'The raw session key, or `Bearer <key>`.',
            },
            // Declared only where /metrics uses it, so no scheme goes unused.
            ...(options.metricsToken
              ? {
                  metricsToken: {
                    type: 'http',
                    scheme: 'bearer',
                    description: 'The METRICS_TOKEN the operator set.',
                  },
                }
              : {}),
          },
        },
      },
    })
  },
  { name: 'openapi' },
)
