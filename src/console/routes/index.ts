import cookie from '@fastify/cookie'
import type { FastifyInstance } from 'fastify'
import { consoleCookie } from '../guard.js'
import type { ConsoleSession } from '../service.js'
import { assetRoutes } from './assets.js'
import { auditRoutes } from './audit.js'
import { eventsRoutes } from './events.js'
import { guardConsole } from './guard-hooks.js'
import { createPageKit } from './kit.js'
import type { ConsoleRoutesOptions } from './options.js'
import { mailRoutes } from './mail.js'
import { overviewRoutes } from './overview.js'
import { signInRoutes } from './sign-in.js'
import { usersRoutes } from './users.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The operator's console session; set on every console route but sign-in's. */
    consoleSession: ConsoleSession | null
  }
}

/**
 * Who can use the console, and how (docs/console.md): one guard for the folder, then each
 * section's routes in its own file.
 */
async function consolePlugin(app: FastifyInstance, options: ConsoleRoutesOptions): Promise<void> {
  const cookieSpec = consoleCookie(options.publicBaseUrl)
  const kit = createPageKit(cookieSpec.name)

  await app.register(cookie)
  // Its forms post urlencoded; the API accepts only JSON.
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string' },
    (_request, body: string, done) => done(null, Object.fromEntries(new URLSearchParams(body))),
  )
  app.decorateRequest('consoleSession', null)
  guardConsole(app, { ...options, kit, cookieName: cookieSpec.name })

  const sections = { ...options, kit, cookieName: cookieSpec.name }
  assetRoutes(app)
  signInRoutes(app, sections)
  overviewRoutes(app, sections)
  usersRoutes(app, sections)
  eventsRoutes(app, sections)
  mailRoutes(app, sections)
  auditRoutes(app, sections)
}

/** The operator console under /console, in its own encapsulated context. */
export async function consoleRoutes(
  app: FastifyInstance,
  options: ConsoleRoutesOptions,
): Promise<void> {
  await app.register(consolePlugin, { ...options, prefix: '/console' })
}
