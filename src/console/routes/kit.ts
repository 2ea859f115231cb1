import type { FastifyReply, FastifyRequest } from 'fastify'
import { languageLinks, pageLocale } from '../../http/locale.js'
import { stringField } from '../../lib/coerce.js'
import { parseLocale } from '../../lib/locale.js'
import { CONSOLE_HEADERS, consoleReturnPath, csrfTokenOf } from '../guard.js'
import type { PageContext } from '../layout.js'
import { ASSET_PATHS } from '../assets.js'

/** What every section's routes use to answer: a page's context, a page, a redirect back. */
export interface PageKit {
  context(request: FastifyRequest, reply: FastifyReply): PageContext
  page(reply: FastifyReply, status: number, html: string): FastifyReply
  /** 303 to `location` (a console path), with the console's headers. */
  redirect(reply: FastifyReply, location: string): FastifyReply
  /**
   * 303 after an action back to the view its form came from (its `back` field: state, endpoint,
   * filters, page, language), or to `fallback` without one, saying what happened and to how
   * many things (docs/console.md, "What each page shows").
   */
  back(
    request: FastifyRequest,
    reply: FastifyReply,
    fallback: string,
    outcome: string,
    count: number,
  ): FastifyReply
  /** As `back`, but always to `path` (the view the action came from is gone: an erased user's). */
  to(
    request: FastifyRequest,
    reply: FastifyReply,
    path: string,
    outcome: string,
    count: number,
  ): FastifyReply
  /** The notice a page shows after an action redirected to it (`?done=&count=`), from its words. */
  done<T extends string>(
    request: FastifyRequest,
    texts: Record<T, (count: number) => string>,
  ): string | null
}

/** Parameters of a view that are an earlier action's notice, not the view. */
const NOTICE = ['done', 'count'] as const

/** A console view's path and query as a form carries it back; '' for anything else. */
export function viewOf(url: string): string {
  const path = consoleReturnPath(url)
  if (path === null) return ''
  const view = new URL(path, 'http://console.invalid')
  for (const name of NOTICE) view.searchParams.delete(name)
  return `${view.pathname}${view.search}`
}

export function createPageKit(cookieName: string): PageKit {
  const redirect = (reply: FastifyReply, location: string): FastifyReply =>
    reply.code(303).headers(CONSOLE_HEADERS).header('location', location).send()
  const to = (
    request: FastifyRequest,
    reply: FastifyReply,
    path: string,
    outcome: string,
    count: number,
  ): FastifyReply => {
    const url = new URL(viewOf(path) || '/console', 'http://console.invalid')
    url.searchParams.set('done', outcome)
    url.searchParams.set('count', String(count))
    const lang = parseLocale(stringField(request.query, 'lang'))
    if (lang !== null && !url.searchParams.has('lang')) url.searchParams.set('lang', lang)
    return redirect(reply, `${url.pathname}${url.search}`)
  }
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
        here: request.method === 'GET' ? viewOf(request.url) : '',
      }
    },

    page: (reply, status, html) =>
      reply.code(status).headers(CONSOLE_HEADERS).type('text/html; charset=utf-8').send(html),

    redirect,

    back(request, reply, fallback, outcome, count) {
      // Only a console view of this origin (consoleReturnPath): the field comes from a form.
      const back = viewOf(stringField(request.body, 'back'))
      return to(request, reply, back === '' ? fallback : back, outcome, count)
    },

    to,

    done(request, texts) {
      const key = stringField(request.query, 'done')
      const count = stringField(request.query, 'count')
      if (!Object.hasOwn(texts, key)) return null
      return texts[key as keyof typeof texts](/^\d{1,7}$/.test(count) ? Number(count) : 0)
    },
  }
}
