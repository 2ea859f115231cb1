import type { FastifyInstance, FastifyReply } from 'fastify'
import { stringField } from '../../lib/coerce.js'
import { consoleCookie } from '../guard.js'
import { continuePage, invalidLinkPage, refusedPage, signInPage } from '../pages.js'
import { universitySignInRoutes } from '../university.js'
import { SIGN_IN_PATH } from './guard-hooks.js'
import { PAGE, type SectionOptions } from './options.js'

/** Signing in (a link, or the university for CONSOLE_OPERATORS) and out. */
export function signInRoutes(app: FastifyInstance, options: SectionOptions): void {
  const { consoleSessions, clock, kit } = options
  const cookieSpec = consoleCookie(options.publicBaseUrl)

  app.get('/sign-in', PAGE, async (request, reply) =>
    kit.page(reply, 200, signInPage(kit.context(request, reply), options.consoleOidc !== null)),
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
      signedIn(reply, value, endsAt) {
        setSessionCookie(reply, value, endsAt)
        return kit.page(reply, 200, continuePage(kit.context(reply.request, reply)))
      },
      refused: (request, reply) => kit.page(reply, 403, refusedPage(kit.context(request, reply))),
    })
  }

  // The link's token is the proof: no CSRF token, but failed tries count against the address.
  app.post('/sign-in', { ...PAGE, onRequest: app.limitSensitive }, async (request, reply) => {
    const token = stringField(request.body, 'token')
    const signedIn = await consoleSessions.signIn(token, request.ip)
    if (signedIn === null) return kit.page(reply, 401, invalidLinkPage(kit.context(request, reply)))
    setSessionCookie(reply, signedIn.cookie, signedIn.session.endsAt)
    return kit.redirect(reply, '/console')
  })

  app.post('/sign-out', PAGE, async (request, reply) => {
    await consoleSessions.signOut(request.consoleSession!, request.ip)
    reply.clearCookie(cookieSpec.name, {
      httpOnly: true,
      sameSite: 'strict',
      secure: cookieSpec.secure,
      path: '/',
    })
    return kit.redirect(reply, SIGN_IN_PATH)
  })
}
