import type { FastifyInstance } from 'fastify'
import { readAsset } from '../../lib/assets.js'
import { CONSOLE_HEADERS } from '../guard.js'
import { PAGE } from './options.js'

const STYLE = readAsset('console.css')
const SCRIPT = readAsset('console.js')

/** The console's style sheet and script: files, since its CSP allows nothing inline. */
export function assetRoutes(app: FastifyInstance): void {
  app.get('/assets/console.css', PAGE, async (_request, reply) =>
    reply
      .headers(CONSOLE_HEADERS)
      .header('cache-control', 'no-cache')
      .type('text/css; charset=utf-8')
      .send(STYLE),
  )
  app.get('/assets/console.js', PAGE, async (_request, reply) =>
    reply
      .headers(CONSOLE_HEADERS)
      .header('cache-control', 'no-cache')
      .type('text/javascript; charset=utf-8')
      .send(SCRIPT),
  )
}
