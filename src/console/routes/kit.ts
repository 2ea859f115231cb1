import type { FastifyReply, FastifyRequest } from 'fastify'
import { languageLinks, pageLocale } from '../../http/locale.js'
import { stringField } from '../../lib/coerce.js'
import { parseLocale } from '../../lib/locale.js'
import { CONSOLE_HEADERS, csrfTokenOf } from '../guard.js'
import type { PageContext } from '../layout.js'
import { ASSET_PATHS } from '../assets.js'

/** What every section's routes use to answer: a page's context, a page, a redirect back. */
export interface PageKit {
  context(request: FastifyRequest, reply: FastifyReply): PageContext
  page(reply: FastifyReply, status: number, html: string): FastifyReply
  /** 303 to `location` (a console path), with the console's headers. */
  redirect(reply: FastifyReply, location: string): FastifyReply
  /** 303 back to a page after an action, carrying what happened and the page's language. */
  back(request: FastifyRequest, reply: FastifyReply, path: string, outcome: string): FastifyReply
  /** The notice a page shows after an action redirected to it (`?done=`), from its words. */
  done<T extends string>(request: FastifyRequest, texts: Record<T, string>): string | null
}

export function createPageKit(cookieName: string): PageKit {
  const redirect = (reply: FastifyReply, location: string): FastifyReply =>
    reply.code(303).headers(CONSOLE_HEADERS).header('location', location).send()
  return {
    context(request, reply) {
      const value = request.cookies[cookieName]
      const session = request.consoleSession
      return {
        locale: pageLocale(request, reply),
        lang: parseLocale(stringField(request.query, 'lang')),
        languageLinks: languageLinks(request),
        operator: session?.operator ?? null,
        role: session?.role ?? null,
        csrf: session === null || value === undefined ? null : csrfTokenOf(value),
        assets: ASSET_PATHS,
      }
    },

    page: (reply, status, html) =>
      reply.code(status).headers(CONSOLE_HEADERS).type('text/html; charset=utf-8').send(html),

    redirect,

    back(request, reply, path, outcome) {
      const lang = parseLocale(stringField(request.query, 'lang'))
      const url = new URL(path, 'http://console.invalid')
      url.searchParams.set('done', outcome)
      if (lang !== null) url.searchParams.set('lang', lang)
      return redirect(reply, `${url.pathname}${url.search}`)
    },

    done(request, texts) {
      const key = stringField(request.query, 'done')
      return Object.hasOwn(texts, key) ? texts[key as keyof typeof texts] : null
    },
  }
}
