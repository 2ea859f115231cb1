import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ERRORS } from '../../errors.js'
import { stringField } from '../../lib/coerce.js'
import { parseLocale } from '../../lib/locale.js'
import { CONSOLE_HEADERS, csrfTokenValid, sameOrigin } from '../guard.js'
import { csrfPage, notFoundPage, rolePage } from '../pages/errors.js'
import { DESCRIBE_PATH, SIGN_IN_PATH } from '../sections.js'
import type { SectionOptions } from './options.js'

export { DESCRIBE_PATH, SIGN_IN_PATH }
/** The POSTs whose proof is a link's token, not a session and its CSRF token. */
const TOKEN_POSTS: ReadonlySet<string> = new Set([SIGN_IN_PATH, DESCRIBE_PATH])
const CSRF_FAILED = '@forbidden/csrf-check-failed'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A console POST any role may send (signing out): every other one is an admin's action. */
    consoleAnyRole?: boolean
  }
}

const pathOf = (request: FastifyRequest) => request.url.split('?')[0]

/** Whether the request asks for JSON rather than a page (a script, not a browser's form). */
function wantsJson(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? ''
  return /json/i.test(accept) && !/text\/html/i.test(accept)
}

/**
 * The console's one guard, for every route of the folder (docs/console.md): a session (else 303
 * to sign-in, which then returns to the page asked for); for every state-changing request the
 * same origin and the page's CSRF token; and for every action the admin role.
 */
export function guardConsole(app: FastifyInstance, options: SectionOptions): void {
  const { consoleSessions, kit, cookieName } = options
  const publicOrigin = new URL(options.publicBaseUrl).origin

  /** To sign-in, with the page to come back to (a GET's own address) and the language. */
  function toSignIn(request: FastifyRequest, reply: FastifyReply): FastifyReply {
    const query = new URLSearchParams()
    if (request.method === 'GET' && pathOf(request) !== '/console') query.set('next', request.url)
    const lang = parseLocale(stringField(request.query, 'lang'))
    if (lang !== null) query.set('lang', lang)
    const search = query.toString()
    return kit.redirect(reply, search === '' ? SIGN_IN_PATH : `${SIGN_IN_PATH}?${search}`)
  }

  /** Same origin as docs/console.md says; the sign-in POST needs it too. */
  function fromThisOrigin(request: FastifyRequest): boolean {
    const site = request.headers['sec-fetch-site']
    return sameOrigin(
      publicOrigin,
      request.headers.origin,
      typeof site === 'string' ? site : undefined,
    )
  }

  /** 403 with the code: `{ error }` to a script, a page in the console's words to a browser. */
  function refuse(
    request: FastifyRequest,
    reply: FastifyReply,
    code: string,
    page: (context: ReturnType<typeof kit.context>) => string,
  ): FastifyReply {
    if (wantsJson(request)) {
      return reply
        .code(403)
        .headers(CONSOLE_HEADERS)
        .type('application/json; charset=utf-8')
        .send(JSON.stringify({ error: code }))
    }
    return kit.page(reply, 403, page(kit.context(request, reply)))
  }

  /** Every console URL but sign-in's and the assets: a session, else 303 to the sign-in page. */
  app.addHook('onRequest', async (request, reply) => {
    const path = pathOf(request)
    if (
      TOKEN_POSTS.has(path) ||
      path.startsWith(`${SIGN_IN_PATH}/university`) ||
      path.startsWith('/console/assets/')
    )
      return
    const value = request.cookies[cookieName]
    const session = value === undefined ? null : await consoleSessions.validate(value)
    if (session === null) return toSignIn(request, reply)
    request.consoleSession = session
  })

  // An address under /console that names no page is a console URL too: without a session it is
  // sent to sign-in like every other (the hook above runs for it), with one it is a page saying so.
  app.setNotFoundHandler((request, reply) => {
    if (request.consoleSession === null) return toSignIn(request, reply)
    return kit.page(reply, 404, notFoundPage(kit.context(request, reply)))
  })

  /**
   * Every state-changing request: same origin; then, but for sign-in (whose token is its proof),
   * the page's CSRF token; then, but for signing out, the admin role, checked here where the
   * request is handled and not only where buttons are drawn. After the body is parsed, since the
   * token is a form field.
   */
  app.addHook('preHandler', async (request, reply) => {
    if (request.method !== 'POST') return
    const signIn = TOKEN_POSTS.has(pathOf(request))
    const csrfOk =
      fromThisOrigin(request) &&
      (signIn ||
        csrfTokenValid(request.cookies[cookieName] ?? '', stringField(request.body, 'csrf')))
    if (!csrfOk) return refuse(request, reply, CSRF_FAILED, csrfPage)
    const session = request.consoleSession
    if (signIn || session === null || request.routeOptions.config.consoleAnyRole === true) return
    // A path that is no action is answered 404 by the not-found handler, for every role: no
    // refusal is recorded for what could never have been done.
    if (request.is404) return
    if (session.role !== 'admin') {
      await consoleSessions.refuseAction(session, request.ip, pathOf(request))
      return refuse(request, reply, ERRORS.operatorRole.code, rolePage)
    }
  })
}
