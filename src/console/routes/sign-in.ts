import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { stringField } from '../../lib/coerce.js'
import { parseLocale } from '../../lib/locale.js'
import type { OperatorRole } from '../../db/schema.js'
import { CONSOLE_HEADERS, consoleCookie, consoleReturnPath } from '../guard.js'
import {
  continuePage,
  invalidLinkPage,
  limitedPage,
  refusedPage,
  signInPage,
} from '../pages/sign-in.js'
import { universitySignInRoutes } from '../university.js'
import { WORDS } from '../words.js'
import { DESCRIBE_PATH, SIGN_IN_PATH } from './guard-hooks.js'
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

  /** The console session this browser holds, if any (the sign-in routes are outside the guard). */
  async function heldSession(request: FastifyRequest) {
    const value = request.cookies[cookieSpec.name]
    return value === undefined ? null : consoleSessions.validate(value)
  }

  // The page never signs in by itself (docs/console.md, "Signing in"): its script shows whom the
  // link in the fragment signs in as, and the operator presses the button.
  app.get('/sign-in', PAGE, async (request, reply) => {
    // Known only when the page was opened from this site: a navigation from another site comes
    // without the SameSite=Strict cookie, and the description below says it then.
    const held = await heldSession(request)
    return kit.page(
      reply,
      200,
      signInPage(kit.context(request, reply), {
        offerUniversity: options.consoleOidc !== null,
        next: consoleReturnPath(stringField(request.query, 'next')) ?? '',
        held,
      }),
    )
  })

  /**
   * What the page's script asks before it offers the button: whom an unused link signs in as, and
   * whom this browser is signed in as now, in the page's words. The link is not spent. Posted by
   * the page (same origin, the token in the body: never in an address a server logs) and counted
   * in the console's sign-in limit like a sign-in, so it is no way to try tokens faster.
   */
  app.post(DESCRIBE_PATH.slice('/console'.length), PAGE, async (request, reply) => {
    const words = WORDS[kit.context(request, reply).locale].signIn
    const json = (status: number, body: object) =>
      reply
        .code(status)
        .headers(CONSOLE_HEADERS)
        .type('application/json; charset=utf-8')
        .send(JSON.stringify(body))
    const seconds = await app.consoleSignIns.refusedFor(request)
    if (seconds !== null) {
      reply.header('retry-after', String(seconds))
      return json(429, { message: words.limited(seconds) })
    }
    const link = await consoleSessions.describeLink(stringField(request.body, 'token'))
    if (link === null) {
      await app.consoleSignIns.fail(request)
      return json(401, { message: `${words.invalidTitle}. ${words.invalid}` })
    }
    const held = await heldSession(request)
    const named = (operator: string, role: OperatorRole) => words.as(operator, words.role[role])
    return json(200, {
      operator: link.operator,
      role: link.role,
      expiresAt: new Date(link.expiresAt).toISOString(),
      button: words.signInAs(named(link.operator, link.role)),
      switching:
        held === null
          ? null
          : words.switching(named(held.operator, held.role), named(link.operator, link.role)),
    })
  })

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
    const signedIn = await consoleSessions.signIn(token, request.ip, await heldSession(request))
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
      // The language the console was used in stays on the sign-in page.
      const lang = parseLocale(stringField(request.query, 'lang'))
      return kit.redirect(reply, lang === null ? SIGN_IN_PATH : `${SIGN_IN_PATH}?lang=${lang}`)
    },
  )
}
