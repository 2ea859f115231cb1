import type { FastifyInstance } from 'fastify'
import { stringField } from '../../lib/coerce.js'
import { CONSOLE_HEADERS, csrfTokenValid, sameOrigin } from '../guard.js'
import { csrfPage, notFoundPage } from '../pages.js'
import type { SectionOptions } from './options.js'

const CSRF_FAILED = '@forbidden/csrf-check-failed'
export const SIGN_IN_PATH = '/console/sign-in'

/**
 * The console's one guard, for every route of the folder: a session (else 303 to sign-in), and
 * for every state-changing request the same origin and the page's CSRF token.
 */
export function guardConsole(app: FastifyInstance, options: SectionOptions): void {
  const { consoleSessions, kit, cookieName } = options
  const publicOrigin = new URL(options.publicBaseUrl).origin

  /** Every console URL but sign-in's and the assets: a session, else 303 to the sign-in page. */
  app.addHook('onRequest', async (request, reply) => {
    const path = request.url.split('?')[0]
    if (
      path === SIGN_IN_PATH ||
      path.startsWith(`${SIGN_IN_PATH}/university`) ||
      path.startsWith('/console/assets/')
    )
      return
    const value = request.cookies[cookieName]
    const session = value === undefined ? null : await consoleSessions.validate(value)
    if (session === null) return kit.redirect(reply, SIGN_IN_PATH)
    request.consoleSession = session
  })

  // An address under /console that names no page is a console URL too: without a session it is
  // sent to sign-in like every other (the hook above runs for it), with one it is a page saying so.
  app.setNotFoundHandler((request, reply) => {
    if (request.consoleSession === null) return kit.redirect(reply, SIGN_IN_PATH)
    return kit.page(reply, 404, notFoundPage(kit.context(request, reply)))
  })

  /**
   * Every state-changing request but sign-in: same origin as docs/console.md says, and the page's
   * CSRF token. After the body is parsed, since the token is a form field.
   */
  app.addHook('preHandler', async (request, reply) => {
    if (request.method !== 'POST' || request.url.split('?')[0] === SIGN_IN_PATH) return
    const value = request.cookies[cookieName] ?? ''
    const origin = request.headers.origin
    const site = request.headers['sec-fetch-site']
    const ok =
      sameOrigin(publicOrigin, origin, typeof site === 'string' ? site : undefined) &&
      csrfTokenValid(value, stringField(request.body, 'csrf'))
    if (ok) return
    const accept = request.headers.accept ?? ''
    if (/json/i.test(accept) && !/text\/html/i.test(accept)) {
      return reply
        .code(403)
        .headers(CONSOLE_HEADERS)
        .type('application/json; charset=utf-8')
        .send(JSON.stringify({ error: CSRF_FAILED }))
    }
    return kit.page(reply, 403, csrfPage(kit.context(request, reply)))
  })
}
