import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'

/**
 * GET /docs: Swagger UI over the OpenAPI document (the same one /openapi.json serves, which the
 * page loads from /docs/json). Its scripts and styles are served from the package itself, so the
 * page works offline and loads nothing from elsewhere.
 */
/** Where the documentation page and its assets are served. */
export const DOCS_PREFIX = '/docs'

export async function apiDocs(app: FastifyInstance): Promise<void> {
  await app.register(swaggerUi, {
    routePrefix: DOCS_PREFIX,
    uiConfig: { deepLinking: true, defaultModelsExpandDepth: 0, tryItOutEnabled: false },
    staticCSP:
      "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; " +
      "script-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'none'",
    theme: { title: 'campusgate API' },
  })
}
