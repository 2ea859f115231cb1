import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { generateSecret, MAX_SECRET_LENGTH, secretsEqual } from '../lib/secrets.js'
import type { ConsoleOperator } from '../config.js'
import type { OidcClient } from '../university/oidc-client.js'
import { CONSOLE_HEADERS } from './guard.js'
import type { ConsoleSessions } from './service.js'

/** The university sign-in's own path, registered at the provider beside tier 2's callback. */
export const UNIVERSITY_CALLBACK_PATH = '/console/sign-in/university/callback'
const ATTEMPT_TTL_S = 600

export interface UniversitySignInOptions {
  oidc: OidcClient
  /** CONSOLE_OPERATORS: university subjects or email addresses (any case), with their roles. */
  operators: readonly ConsoleOperator[]
  consoleSessions: ConsoleSessions
  secureCookies: boolean
  /** The page to return to after sign-in (`?next=`), checked; null: the overview. */
  returnPath(raw: string): string | null
  /** Over the console's sign-in limit: the page saying when to try again, or null. */
  limited(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | null>
  /** Counts a refused sign-in against the address (the console's own limit). */
  failed(request: FastifyRequest): Promise<void>
  /**
   * Sets the console cookie and answers the page that takes the browser to the console (to
   * `next` when the sign-in began on the way to a page).
   */
  signedIn(reply: FastifyReply, cookie: string, endsAt: number, next: string | null): FastifyReply
  refused(request: FastifyRequest, reply: FastifyReply): FastifyReply
}

/**
 * State, nonce and PKCE verifier of one sign-in, derived from a random cookie only that browser
 * holds: nothing is stored, and a callback without the cookie can do nothing. Separate from tier
 * 2's attempt (its own cookie, its own labels, its own redirect URI).
 */
function attempt(cookie: string): { state: string; codeVerifier: string; nonce: string } {
  const derive = (label: string) =>
    createHash('sha256').update(`campusgate-console-${label}:${cookie}`).digest('base64url')
  return { state: derive('state'), codeVerifier: derive('pkce'), nonce: derive('nonce') }
}

/** The entry of CONSOLE_OPERATORS the proven identity is, by subject or email; null: none. */
export function operatorOf(
  operators: readonly ConsoleOperator[],
  identity: { subject: string; email?: string },
): ConsoleOperator | null {
  const email = identity.email?.toLowerCase()
  return (
    operators.find(
      (operator) => operator.id === identity.subject || operator.id.toLowerCase() === email,
    ) ?? null
  )
}

/** docs/console.md: operators of CONSOLE_OPERATORS sign in with their university account. */
export function universitySignInRoutes(
  app: FastifyInstance,
  options: UniversitySignInOptions,
): void {
  const cookieName = options.secureCookies
    ? '__Host-campusgate-console-attempt'
    : 'campusgate-console-attempt'
  const cookieOptions = {
    httpOnly: true,
    // The provider sends the browser back with a top-level GET from its own site.
    sameSite: 'lax' as const,
    secure: options.secureCookies,
    path: '/',
  }
  const page = { config: { versionedMediaType: false }, schema: { hide: true } } as const

  app.get<{ Querystring: Record<string, string | undefined> }>(
    '/sign-in/university',
    page,
    async (request, reply) => {
      const over = await options.limited(request, reply)
      if (over !== null) return over
      // The page to return to rides in the attempt cookie, bound to the browser like the rest.
      const next = options.returnPath(request.query.next ?? '')
      const cookie = `${generateSecret()}${next === null ? '' : `.${Buffer.from(next).toString('base64url')}`}`
      const { state, ...secrets } = attempt(cookie)
      const location = await options.oidc.authorizationUrl(state, secrets)
      reply.setCookie(cookieName, cookie, { ...cookieOptions, maxAge: ATTEMPT_TTL_S })
      return reply.code(303).headers(CONSOLE_HEADERS).header('location', location).send()
    },
  )

  app.get<{ Querystring: Record<string, string | undefined> }>(
    '/sign-in/university/callback',
    page,
    async (request, reply) => {
      const over = await options.limited(request, reply)
      if (over !== null) return over
      const cookie = request.cookies[cookieName] ?? ''
      reply.clearCookie(cookieName, cookieOptions)
      const refuse = async (reason: string) => {
        await options.consoleSessions.refuseUniversity(request.ip, reason)
        await options.failed(request)
        return options.refused(request, reply)
      }
      const query = request.query
      const state = typeof query.state === 'string' ? query.state : ''
      if (cookie === '' || cookie.length > 2 * MAX_SECRET_LENGTH + 4096) {
        return refuse('no attempt cookie')
      }
      const expected = attempt(cookie)
      if (!secretsEqual(state, expected.state)) return refuse('state mismatch')
      const wrongIssuer = await options.oidc.checkIssuer(query.iss)
      if (wrongIssuer !== null) return refuse(wrongIssuer)
      const params = Object.fromEntries(
        ['code', 'state', 'iss', 'error', 'error_description'].flatMap((name) =>
          typeof query[name] === 'string' ? [[name, query[name]]] : [],
        ),
      )
      const outcome = await options.oidc.complete(params, expected)
      const operator =
        outcome.kind === 'linked' ? operatorOf(options.operators, outcome.identity) : null
      if (outcome.kind !== 'linked' || operator === null) {
        return refuse(outcome.kind === 'linked' ? 'not an operator' : outcome.kind)
      }
      const signedIn = await options.consoleSessions.signInWithUniversity(
        outcome.identity.subject,
        operator.role,
        request.ip,
      )
      const carried = cookie.split('.')[1]
      const next =
        carried === undefined
          ? null
          : options.returnPath(Buffer.from(carried, 'base64url').toString('utf8'))
      return options.signedIn(reply, signedIn.cookie, signedIn.session.endsAt, next)
    },
  )
}
