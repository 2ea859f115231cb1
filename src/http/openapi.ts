import swagger, { type FastifyDynamicSwaggerOptions } from '@fastify/swagger'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { webhooksDocument } from '../events/openapi.js'
import { BODY_LIMIT_BYTES, MEDIA_TYPE } from './media-type.js'
import { errorResponse, errorResponses, jsonResponse } from './schemas.js'

type Webhooks = Extract<
  NonNullable<FastifyDynamicSwaggerOptions['openapi']>,
  { webhooks?: unknown }
>['webhooks']

/**
 * Builds the OpenAPI 3.1 document from the route schemas; register before any route.
 */
export const openapi = fp(
  async function openapiPlugin(
    app: FastifyInstance,
    options: {
      version: string
      publicBaseUrl: string
      metricsToken: boolean
      /** BACKEND_CREDENTIALS is set: POST /introspect is served, with HTTP Basic. */
      backendCredentials?: boolean
    },
  ) {
    await app.register(swagger, {
      // Only an OpenAPI document is ever built here.
      transformObject: (built) =>
        completeDocument('openapiObject' in built ? built.openapiObject : {}),
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'campusgate',
          version: options.version,
          description: 'Registration and sessions for a university community mini-program.',
          license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
        },
        servers: [{ url: options.publicBaseUrl }],
        // What campusgate sends to WEBHOOK_URL (docs/webhooks.md).
        webhooks: webhooksDocument() as Webhooks,
        components: {
          responses: {
            // Answered for any method and path that no operation has.
            unknownEndpoint: errorResponse('unknownEndpoint'),
            // The app's own routes answer these rows, which no campusgate operation produces: a
            // route behind requireTier('university-registered') refuses a tier-1 session, and a
            // body field that breaks the route's schema without an error of its own is invalid.
            insufficientRegistrationTier: errorResponse('insufficientRegistrationTier'),
            invalidValue: errorResponse('invalidValue'),
            // The operator console's answer (as JSON to a script) to a viewer's action: its pages
            // are no operations of this document (docs/console.md, "Roles").
            operatorRole: errorResponse('operatorRole'),
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
            ...(options.backendCredentials === true
              ? {
                  backendCredentials: {
                    type: 'http',
                    scheme: 'basic',
                    description: 'A backend id and secret of BACKEND_CREDENTIALS.',
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

type Document = { paths?: unknown }
type Paths = Record<string, Record<string, Record<string, unknown>>>

/** Operations that take no body, but read one that is sent (and refuse it as any route would). */
const BODY_IGNORED = new Set(['logout', 'eraseUser', 'deleteSession'])

const IGNORED_BODY = {
  required: false,
  description:
    `None is needed. One that is sent is still read: it must be JSON, in ${MEDIA_TYPE} or ` +
    `application/json, of at most ${BODY_LIMIT_BYTES} bytes; its content is ignored.`,
  content: { [MEDIA_TYPE]: { schema: {} }, 'application/json': { schema: {} } },
}

/**
 * What no route schema says: the routes that serve the documentation themselves, and the body an
 * operation reads without needing one.
 */
function completeDocument<T extends Document>(document: T): T {
  const paths: Paths = { ...(document.paths as Paths | undefined) }
  for (const item of Object.values(paths)) {
    for (const operation of Object.values(item)) {
      if (BODY_IGNORED.has(operation.operationId as string)) operation.requestBody = IGNORED_BODY
    }
  }
  // Public, like the health probes.
  const tags = ['documentation']
  const security: unknown[] = []
  paths['/openapi.json'] = {
    get: {
      operationId: 'getOpenApiDocument',
      summary: 'This OpenAPI document',
      tags,
      security,
      responses: {
        200: jsonResponse('The OpenAPI 3.1 document.', { type: 'object' }),
        ...errorResponses(),
      },
    },
  }
  paths['/docs'] = {
    get: {
      operationId: 'getApiDocs',
      summary: 'Swagger UI over this document',
      description: 'Its scripts and styles are served under `/docs/static/` by this server.',
      tags,
      security,
      responses: {
        200: { description: 'The page.', content: { 'text/html': { schema: { type: 'string' } } } },
        ...errorResponses(),
      },
    },
  }
  paths['/docs/static/{asset}'] = {
    get: {
      operationId: 'getApiDocsAsset',
      summary: 'A script, style sheet or image of the Swagger UI page',
      tags,
      security,
      parameters: [{ name: 'asset', in: 'path', required: true, schema: { type: 'string' } }],
      responses: {
        200: {
          description: 'The asset, in its own media type.',
          content: { '*/*': { schema: {} } },
        },
        404: { $ref: '#/components/responses/unknownEndpoint' },
        ...errorResponses(),
      },
    },
  }
  return { ...document, paths }
}
