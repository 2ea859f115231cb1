import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { sendHtml, wantsHtml } from '../http/html.js'
import { pageLocale } from '../http/locale.js'
import { MEDIA_TYPE } from '../http/media-type.js'
import { EMPTY_OBJECT } from '../http/schemas.js'
import { escapeHtml, htmlPage } from '../lib/html.js'
import type { Catalogue } from '../lib/locale.js'
import { IGNORED, type CallbackResult } from './callback.js'
import { MAX_SAML_RESPONSE_CHARS } from './saml/saml-protocol.js'
import type { University } from './service.js'

// docs/university-providers.md, "The round trip" (SAML): the service provider's metadata, and the
// IdP's HTTP-POST to the callback with the re-post from campusgate's own origin that brings the
// attempt cookie along.

export interface SamlRoutesOptions {
  university: University
  /** The attempt cookie's name (with `__Host-` over https). */
  cookieName: string
  /** Answers a callback as the GET callback does (routes.ts). */
  answerCallback: (
    request: FastifyRequest,
    reply: FastifyReply,
    result: CallbackResult,
  ) => FastifyReply | Record<string, never>
}

/** The field the re-post adds: a post that has it and still no cookie is refused, not re-posted. */
const REPOSTED = 'campusgate_reposted'
/** The only fields the re-post carries on: the HTTP-POST binding's two. */
const CARRIED = ['SAMLResponse', 'RelayState'] as const
/** A SAMLResponse of 256 KiB, its RelayState and the form encoding's growth (base64's `+`, `/`, `=`). */
const BODY_LIMIT = 3 * MAX_SAML_RESPONSE_CHARS + 16 * 1024
/** The re-post page's script: submits the form, so the browser posts without a click. */
const REPOST_SCRIPT = "document.getElementById('repost').submit()\n"
const REPOST_SCRIPT_PATH = '/authorize/university/repost.js'

const REPOST_TEXT: Catalogue<{ title: string; text: string; button: string }> = {
  en: {
    title: 'Returning from the university',
    text: 'Taking you back to the app from your university sign-in.',
    button: 'Continue',
  },
  'zh-CN': { title: '正在从大学返回', text: '正在从大学登录返回小程序。', button: '继续' },
}

/**
 * The form's fields, each read once in one pass: a field sent twice counts as absent, so nothing
 * downstream chooses between two SAMLResponses.
 */
function formFields(body: string): Record<string, string | undefined> {
  const fields = Object.create(null) as Record<string, string | undefined>
  const repeated = new Set<string>()
  for (const [name, value] of new URLSearchParams(body)) {
    if (name in fields || repeated.has(name)) {
      repeated.add(name)
      fields[name] = undefined
    } else {
      fields[name] = value
    }
  }
  return fields
}

/** The page that posts the IdP's fields again, now from campusgate's own origin. */
function repostPage(
  request: FastifyRequest,
  reply: FastifyReply,
  fields: Record<string, string | undefined>,
): FastifyReply {
  const locale = pageLocale(request, reply, { allowOverride: false })
  const text = REPOST_TEXT[locale]
  const hidden = CARRIED.flatMap((name) => {
    const value = fields[name]
    return value === undefined
      ? []
      : [`<input type="hidden" name="${name}" value="${escapeHtml(value)}">`]
  })
  const body = `<p>${escapeHtml(text.text)}</p>
<form id="repost" method="post" action="/authorize/university/callback">
${hidden.join('\n')}
<input type="hidden" name="${REPOSTED}" value="1">
<button type="submit">${escapeHtml(text.button)}</button>
</form>`
  const html = htmlPage(text.title, body, { locale, scripts: [REPOST_SCRIPT_PATH] })
  return sendHtml(reply, 200, html, { runsScript: true })
}

export async function samlRoutes(
  app: FastifyInstance,
  { university, cookieName, answerCallback }: SamlRoutesOptions,
): Promise<void> {
  const metadata = university.samlMetadata()
  if (metadata === null) return

  app.get(
    '/authorize/university/saml',
    {
      config: { versionedMediaType: false },
      schema: {
        operationId: 'samlServiceProviderMetadata',
        summary: "The SAML service provider's metadata (UNIVERSITY_PROTOCOL=saml only)",
        security: [],
        tags: ['registration'],
        produces: ['application/samlmetadata+xml'],
        response: {
          200: {
            description: 'The SP metadata to register at the IdP or in a federation.',
            content: { 'application/samlmetadata+xml': { schema: { type: 'string' } } },
          },
        },
      },
    },
    async (_request, reply) =>
      reply
        .header('cache-control', 'public, max-age=3600')
        .type('application/samlmetadata+xml; charset=utf-8')
        .send(university.samlMetadata()),
  )

  app.get(
    REPOST_SCRIPT_PATH,
    { config: { versionedMediaType: false }, schema: { hide: true } },
    async (_request, reply) =>
      reply
        .header('cache-control', 'no-store')
        .header('x-content-type-options', 'nosniff')
        .type('text/javascript; charset=utf-8')
        .send(REPOST_SCRIPT),
  )

  await app.register(async (form) => {
    form.removeAllContentTypeParsers()
    form.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: BODY_LIMIT },
      (_request, body: string, done) => done(null, formFields(body)),
    )
    // Whatever else is posted is read and dropped: the callback answers 200 all the same.
    form.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: BODY_LIMIT }, (_r, _b, done) =>
      done(null, undefined),
    )

    form.post<{ Body: Record<string, string | undefined> | undefined }>(
      '/authorize/university/callback',
      {
        onRequest: form.limitSensitive,
        bodyLimit: BODY_LIMIT,
        schema: {
          operationId: 'universityCallbackSaml',
          summary:
            "Tier 2, step 3 with UNIVERSITY_PROTOCOL=saml: the IdP's Response (HTTP-POST binding); always 200",
          description:
            'The IdP posts `SAMLResponse` and `RelayState` from its own site, so the attempt cookie ' +
            'does not come with it: a browser gets a page that posts the same fields again from ' +
            "campusgate's origin, and only that second post, which carries the cookie, can link.",
          security: [],
          tags: ['registration'],
          consumes: ['application/x-www-form-urlencoded'],
          response: {
            200: {
              description: 'Acknowledged. Browsers (Accept: text/html) get a page, others `{}`.',
              content: {
                [MEDIA_TYPE]: { schema: EMPTY_OBJECT },
                'text/html': { schema: { type: 'string' } },
              },
            },
          },
        },
        attachValidation: true,
        config: { answersWhenRateLimited: true, answersAnyAccept: true },
      },
      async (request, reply) => {
        const fields = request.body ?? {}
        const attemptCookie = request.cookies[cookieName] ?? null
        if (attemptCookie === null && fields[REPOSTED] === undefined && wantsHtml(request)) {
          return repostPage(request, reply, fields)
        }
        const result = request.overRateLimit
          ? IGNORED
          : await university.handleCallback({
              method: 'POST',
              params: fields,
              attemptCookie,
              ip: request.ip,
            })
        return answerCallback(request, reply, result)
      },
    )
  })
}
