import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'

/**
 * GET /docs: Swagger UI over the OpenAPI document (the same one /openapi.json serves, which the
 * page loads from /docs/json). Its scripts and styles are served from the package itself, so the
 * page works offline and loads nothing from elsewhere. Its routes are marked `documentationAsset`
 * for the error handler (registered encapsulated, the hook sees only them).
 */
export async function apiDocs(app: FastifyInstance): Promise<void> {
  app.addHook('onRoute', (route) => {
    route.config = { ...route.config, documentationAsset: true }
  })
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { deepLinking: true, defaultModelsExpandDepth: 0, tryItOutEnabled: false },
    staticCSP:
      "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; " +
      "script-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'none'",
    theme: { title: 'campusgate API' },
  })
}
