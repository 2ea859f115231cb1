import type { FastifyInstance } from 'fastify'
import { FILES } from '../assets.js'
import { CONSOLE_HEADERS } from '../guard.js'
import { PAGE } from './options.js'

/** The console's style sheet and script, cacheable for a year (assets.ts). */
export function assetRoutes(app: FastifyInstance): void {
  for (const file of FILES) {
    app.get(`/assets/${file.file}`, PAGE, async (request, reply) => {
      reply
        .headers(CONSOLE_HEADERS)
        .header('cache-control', 'public, max-age=31536000, immutable')
        .header('etag', file.etag)
        .type(file.type)
      if (request.headers['if-none-match'] === file.etag) return reply.code(304).send()
      return reply.send(file.body)
    })
  }
}
