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
    options: { version: string; publicBaseUrl: string },
  ) {
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'campusgate',
          version: options.version,
          description: 'Registration and sessions for a university community mini-program.',
        },
        servers: [{ url: options.publicBaseUrl }],
        components: {
          // Answered for any method and path that no operation has.
          responses: { unknownEndpoint: errorResponse('unknownEndpoint') },
          securitySchemes: {
            sessionKey: {
              type: 'apiKey',
              in: 'header',
              name: 'Authorization',
              description: 'The raw session key, or `Bearer <key>`.',
            },
            metricsToken: {
              type: 'http',
              scheme: 'bearer',
              description: 'METRICS_TOKEN, when the operator set one.',
            },
          },
        },
      },
    })
  },
  { name: 'openapi' },
)
