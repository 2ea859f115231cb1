import type { FastifyInstance } from 'fastify'
import { deviceRoutes } from './routes/devices.js'
import { eraseRoute } from './routes/erase.js'
import { logoutRoute } from './routes/logout.js'
import type { SessionRoutesOptions } from './routes/options.js'
import { registerRoute } from './routes/register.js'
import { sessionRoute } from './routes/session.js'

export type { SessionRoutesOptions }

/**
 * The session routes (docs/sessions.md), one concern a module: registration, who a key is, the
 * person's devices, logout and erasure.
 */
export function sessionRoutes(app: FastifyInstance, options: SessionRoutesOptions): void {
  registerRoute(app, options)
  logoutRoute(app, options)
  deviceRoutes(app, options)
  eraseRoute(app, options)
  sessionRoute(app)
}
