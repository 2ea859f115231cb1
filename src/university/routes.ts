import cookie from '@fastify/cookie'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { AppError } from '../errors.js'
import { sendHtml, wantsHtml } from '../http/html.js'
import { pageLocale, requestLocale } from '../http/locale.js'
import { MEDIA_TYPE } from '../http/media-type.js'
import {
  EMPTY_OBJECT,
  errorResponses,
  jsonResponse,
  protocolEdgeResponses,
} from '../http/schemas.js'
import { callbackPage } from './pages.js'
import { samlRoutes } from './saml-routes.js'
import { IGNORED, type CallbackResult } from './callback.js'
import type { University } from './service.js'

export interface UniversityRoutesOptions {
  university: University
  publicBaseUrl: string
}

/** The seed's three no-cache headers, plus no Referer to the identity provider (docs/decisions.md, "Tier 2 round trip"). */
const NO_CACHE = {
  'cache-control': 'no-cache, no-store, must-revalidate',
  pragma: 'no-cache',
  expires: '0',
  'referrer-policy': 'no-referrer',
} as const

const optionalString = { type: 'string' } as const

async function noCache(_request: FastifyRequest, reply: FastifyReply): Promise<void> {
  reply.headers(NO_CACHE)
}

/** The callback's parameters that are single strings; a repeated or structured one counts as absent. */
function stringParams(query: Record<string, unknown>): Record<string, string | undefined> {
  const params = Object.create(null) as Record<string, string | undefined>
  for (const [name, value] of Object.entries(query)) {
    if (typeof value === 'string') params[name] = value
  }
  return params
}

export async function universityRoutes(
  app: FastifyInstance,
  { university, publicBaseUrl }: UniversityRoutesOptions,
): Promise<void> {
  await app.register(cookie)
  // docs/decisions.md, "Tier 2 round trip": Secure and the __Host- prefix when served over https. Browsers accept __Host- cookies
  // only with Path=/, so the prefixed cookie is scoped to the whole host.
  const secure = publicBaseUrl.startsWith('https:')
  const cookieName = secure ? '__Host-campusgate-attempt' : 'campusgate-attempt'
  const cookiePath = secure ? '/' : '/authorize/university'
  /** The callback's answer, by GET or (SAML) POST: the attempt cookie ends once it was used. */
  const answerCallback = (
    request: FastifyRequest,
    reply: FastifyReply,
    result: CallbackResult,
  ): FastifyReply | Record<string, never> => {
    reply.header('cache-control', 'no-store')
    if (result.boundToBrowser) {
      reply.clearCookie(cookieName, { path: cookiePath, secure, httpOnly: true, sameSite: 'lax' })
    }
    if (!wantsHtml(request)) return {}
    // The provider writes the callback's fields, so only Accept-Language chooses the language.
    const locale = pageLocale(request, reply, { allowOverride: false })
    return sendHtml(reply, 200, callbackPage(result, locale))
  }

  app.post<{ Body: { email: string } }>(
    '/register/university',
    {
      onRequest: [app.limitSensitive, app.requireTier('messenger-registered')],
      config: { invalidFieldErrors: { '/email': 'invalidEmail' } },
      schema: {
        operationId: 'registerUniversity',
        summary: 'Tier 2, step 1: email a confirmation link',
        tags: ['registration'],
        security: [{ sessionKey: [] }],
        body: {
          type: 'object',
          required: ['email'],
          properties: { email: { type: 'string', minLength: 1, maxLength: 254, format: 'email' } },
        },
        response: {
          200: jsonResponse('Accepted; the confirmation email is on its way.', EMPTY_OBJECT),
          ...errorResponses(
            'missingRequiredKeys',
            'invalidEmail',
            'emailDomainNotAllowed',
            'malformedJson',
            'bodyTooLarge',
            'jsonRequired',
            'missingAuthorizationHeader',
            'invalidSessionKey',
          ),
        },
      },
    },
    async (request) => {
      await university.startRegistration(
        request.session!.userId,
        request.body.email,
        requestLocale(request),
      )
      return {}
    },
  )

  app.get<{ Querystring: { universityRegistrationCode: string } }>(
    '/authorize/university',
    {
      // Every answer of the link (301, 400, 401, 429) is kept out of caches.
      onRequest: [noCache, app.limitSensitive],
      schema: {
        operationId: 'authorizeUniversity',
        summary: 'Tier 2, step 2: the emailed link; redirects to the identity provider',
        // No session key: the route is open to anyone.
        security: [],
        tags: ['registration'],
        querystring: {
          type: 'object',
          required: ['universityRegistrationCode'],
          properties: { universityRegistrationCode: { type: 'string', minLength: 1 } },
        },
        response: {
          301: {
            description:
              'To the identity provider: `Location: {provider_authorize_url}?client_id=<client_id>&state=<openId>`, ' +
              'with no-cache headers and the attempt cookie. With `UNIVERSITY_PROTOCOL=oidc` the provider is ' +
              "the issuer's authorization endpoint and the OpenID Connect parameters follow (`response_type`, " +
              '`redirect_uri`, `scope`, `code_challenge`, `code_challenge_method=S256`, `nonce`).',
            type: 'null',
            headers: {
              location: { type: 'string' },
              'set-cookie': { type: 'string' },
              'cache-control': { type: 'string' },
              pragma: { type: 'string' },
              expires: { type: 'string' },
              'referrer-policy': { type: 'string' },
            },
          },
          ...errorResponses(
            'missingRequiredQueryParameters',
            'invalidUniversityRegistrationCode',
            'universityProviderUnavailable',
          ),
        },
      },
    },
    async (request, reply) => {
      const opened = await university.openLink(request.query.universityRegistrationCode)
      if (opened === null) throw new AppError('invalidUniversityRegistrationCode')
      reply.setCookie(cookieName, opened.attemptCookie, {
        httpOnly: true,
        sameSite: 'lax',
        secure,
        path: cookiePath,
        maxAge: opened.cookieMaxAgeSeconds,
      })
      return reply.redirect(opened.location, 301)
    },
  )

  app.get<{ Querystring: Record<string, unknown> }>(
    '/authorize/university/callback',
    {
      onRequest: app.limitSensitive,
      schema: {
        operationId: 'universityCallback',
        summary: 'Tier 2, step 3: called by the identity provider only; always 200',
        // No session key: the route is open to anyone.
        security: [],
        tags: ['registration'],
        querystring: {
          type: 'object',
          properties: {
            client_id: optionalString,
            state: optionalString,
            client_secret: optionalString,
            code: optionalString,
            result: optionalString,
            iss: optionalString,
            error: optionalString,
            error_description: optionalString,
          },
        },
        response: {
          200: {
            description: 'Acknowledged. Browsers (Accept: text/html) get a page, others `{}`.',
            content: {
              [MEDIA_TYPE]: { schema: EMPTY_OBJECT },
              'text/html': { schema: { type: 'string' } },
            },
          },
          ...protocolEdgeResponses(),
        },
      },
      // Validation never refuses a callback: the provider gets its 200 whatever it sent.
      attachValidation: true,
      // Nor do rate limits (over one, the callback answers as usual and acts on nothing), nor Accept.
      config: { answersWhenRateLimited: true, answersAnyAccept: true },
    },
    async (request, reply) => {
      const query = request.query
      const result = request.overRateLimit
        ? IGNORED
        : await university.handleCallback({
            method: 'GET',
            params: stringParams(query),
            attemptCookie: request.cookies[cookieName] ?? null,
            ip: request.ip,
          })
      return answerCallback(request, reply, result)
    },
  )

  // UNIVERSITY_PROTOCOL=saml: the SP metadata and the IdP's POST to the callback.
  await samlRoutes(app, { university, cookieName, answerCallback })
}
