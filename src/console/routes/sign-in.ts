import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { stringField } from '../../lib/coerce.js'
import { parseLocale } from '../../lib/locale.js'
import { consoleCookie, consoleReturnPath } from '../guard.js'
import {
  continuePage,
  invalidLinkPage,
  limitedPage,
  refusedPage,
  signInPage,
} from '../pages/sign-in.js'
import { universitySignInRoutes } from '../university.js'
import { SIGN_IN_PATH } from './guard-hooks.js'
import { PAGE, type SectionOptions } from './options.js'

/**
 * Signing in (a link, or the university for CONSOLE_OPERATORS) and out. Failed sign-ins count
 * against the address in the console's own limit (RATE_LIMIT_CONSOLE_SIGN_IN_PER_ADDRESS), not
 * the students' registration limit: a console locked out by guessing never blocks students.
 */
export function signInRoutes(app: FastifyInstance, options: SectionOptions): void {
  const { consoleSessions, clock, kit } = options
  const cookieSpec = consoleCookie(options.publicBaseUrl)

  /** Where to go once signed in: the page asked for, in the language it was asked in. */
  function landing(request: FastifyRequest, next: string | null): string {
    const url = new URL(next ?? '/console', 'http://console.invalid')
    const lang = parseLocale(stringField(request.query, 'lang'))
    if (lang !== null && !url.searchParams.has('lang')) url.searchParams.set('lang', lang)
    return `${url.pathname}${url.search}`
  }

  /** Over the limit: 429 and a page saying when to try again (and `Retry-After`). */
  async function limited(request: FastifyRequest, reply: FastifyReply) {
    const seconds = await app.consoleSignIns.refusedFor(request)
    if (seconds === null) return null
    reply.header('retry-after', String(seconds))
    const now = clock.now().getTime()
    return kit.page(reply, 429, limitedPage(kit.context(request, reply), seconds, now))
  }

  app.get('/sign-in', PAGE, async (request, reply) =>
    kit.page(
      reply,
      200,
      signInPage(
        kit.context(request, reply),
        options.consoleOidc !== null,
        consoleReturnPath(stringField(request.query, 'next')) ?? '',
      ),
    ),
  )

  function setSessionCookie(reply: FastifyReply, value: string, endsAt: number): void {
    reply.setCookie(cookieSpec.name, value, {
      httpOnly: true,
      sameSite: 'strict',
      secure: cookieSpec.secure,
      path: '/',
      maxAge: Math.floor((endsAt - clock.now().getTime()) / 1000),
    })
  }

  if (options.consoleOidc !== null) {
    universitySignInRoutes(app, {
      oidc: options.consoleOidc,
      operators: options.operators,
      consoleSessions,
      secureCookies: cookieSpec.secure,
      returnPath: consoleReturnPath,
      limited,
      failed: (request) => app.consoleSignIns.fail(request),
      signedIn(reply, value, endsAt, next) {
        setSessionCookie(reply, value, endsAt)
        const context = kit.context(reply.request, reply)
        return kit.page(reply, 200, continuePage(context, landing(reply.request, next)))
      },
      refused: (request, reply) => kit.page(reply, 403, refusedPage(kit.context(request, reply))),
    })
  }

  // The link's token is the proof: no CSRF token, but the same origin (guard-hooks.ts), so no
  // other site can sign a browser in to a session of its choosing.
  app.post('/sign-in', PAGE, async (request, reply) => {
    const over = await limited(request, reply)
    if (over !== null) return over
    const token = stringField(request.body, 'token')
    const signedIn = await consoleSessions.signIn(token, request.ip)
    if (signedIn === null) {
      await app.consoleSignIns.fail(request)
      return kit.page(reply, 401, invalidLinkPage(kit.context(request, reply)))
    }
    setSessionCookie(reply, signedIn.cookie, signedIn.session.endsAt)
    const next = consoleReturnPath(stringField(request.body, 'next'))
    return kit.redirect(reply, landing(request, next))
  })

  app.post(
    '/sign-out',
    { ...PAGE, config: { ...PAGE.config, consoleAnyRole: true } },
    async (request, reply) => {
      await consoleSessions.signOut(request.consoleSession!, request.ip)
      reply.clearCookie(cookieSpec.name, {
        httpOnly: true,
        sameSite: 'strict',
        secure: cookieSpec.secure,
        path: '/',
      })
      return kit.redirect(reply, SIGN_IN_PATH)
    },
  )
}
