import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { generateSecret, MAX_SECRET_LENGTH, secretsEqual } from '../lib/secrets.js'
import type { OidcClient } from '../university/oidc-client.js'
import { CONSOLE_HEADERS } from './guard.js'
import type { ConsoleSessions } from './service.js'

/** The university sign-in's own path, registered at the provider beside tier 2's callback. */
export const UNIVERSITY_CALLBACK_PATH = '/console/sign-in/university/callback'
const ATTEMPT_TTL_S = 600

export interface UniversitySignInOptions {
  oidc: OidcClient
  /** CONSOLE_OPERATORS: university subjects or email addresses (any case). */
  operators: readonly string[]
  consoleSessions: ConsoleSessions
  secureCookies: boolean
  /** Sets the console cookie and answers the page that takes the browser to the console. */
  signedIn(reply: FastifyReply, cookie: string, endsAt: number): FastifyReply
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

/** Whether the proven identity is one of CONSOLE_OPERATORS, by subject or email. */
export function isOperator(
  operators: readonly string[],
  identity: { subject: string; email?: string },
): boolean {
  const email = identity.email?.toLowerCase()
  return operators.some(
    (operator) => operator === identity.subject || operator.toLowerCase() === email,
  )
}

/** SPEC.md, "Operator console": operators of CONSOLE_OPERATORS sign in with their university account. */
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

  app.get(
    '/sign-in/university',
    { ...page, onRequest: app.limitSensitive },
    async (_request, reply) => {
      const cookie = generateSecret()
      const { state, ...secrets } = attempt(cookie)
      const location = await options.oidc.authorizationUrl(state, secrets)
      reply.setCookie(cookieName, cookie, { ...cookieOptions, maxAge: ATTEMPT_TTL_S })
      return reply.code(303).headers(CONSOLE_HEADERS).header('location', location).send()
    },
  )

  app.get<{ Querystring: Record<string, string | undefined> }>(
    '/sign-in/university/callback',
    { ...page, onRequest: app.limitSensitive },
    async (request, reply) => {
      const cookie = request.cookies[cookieName] ?? ''
      reply.clearCookie(cookieName, cookieOptions)
      const query = request.query
      const state = typeof query.state === 'string' ? query.state : ''
      if (cookie === '' || cookie.length > MAX_SECRET_LENGTH) {
        await options.consoleSessions.refuseUniversity(request.ip, 'no attempt cookie')
        return options.refused(request, reply)
      }
      const expected = attempt(cookie)
      if (!secretsEqual(state, expected.state)) {
        await options.consoleSessions.refuseUniversity(request.ip, 'state mismatch')
        return options.refused(request, reply)
      }
      const wrongIssuer = await options.oidc.checkIssuer(query.iss)
      if (wrongIssuer !== null) {
        await options.consoleSessions.refuseUniversity(request.ip, wrongIssuer)
        return options.refused(request, reply)
      }
      const params = Object.fromEntries(
        ['code', 'state', 'iss', 'error', 'error_description'].flatMap((name) =>
          typeof query[name] === 'string' ? [[name, query[name]]] : [],
        ),
      )
      const outcome = await options.oidc.complete(params, expected)
      if (outcome.kind !== 'linked' || !isOperator(options.operators, outcome.identity)) {
        await options.consoleSessions.refuseUniversity(
          request.ip,
          outcome.kind === 'linked' ? 'not an operator' : outcome.kind,
        )
        return options.refused(request, reply)
      }
      const signedIn = await options.consoleSessions.signInWithUniversity(
        outcome.identity.subject,
        request.ip,
      )
      return options.signedIn(reply, signedIn.cookie, signedIn.session.endsAt)
    },
  )
}
