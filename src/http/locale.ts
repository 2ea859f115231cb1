import type { FastifyReply, FastifyRequest } from 'fastify'
import { chooseLocale, LOCALES, parseLocale, type Locale } from '../lib/locale.js'
import { stringField } from '../lib/coerce.js'

/** Adds a field to `Vary`, keeping what is already there. */
function addVary(reply: FastifyReply, field: string): void {
  const current = reply.getHeader('vary')
  const fields = typeof current === 'string' && current !== '' ? current.split(/\s*,\s*/) : []
  if (fields.some((name) => name.toLowerCase() === field.toLowerCase())) return
  reply.header('vary', [...fields, field].join(', '))
}

/**
 * The language of a page: `?lang=` when `allowOverride` (the language switch writes it), else
 * the request's Accept-Language. The answer then varies by that header, and says so.
 */
export function pageLocale(
  request: FastifyRequest,
  reply: FastifyReply,
  { allowOverride = true }: { allowOverride?: boolean } = {},
): Locale {
  addVary(reply, 'Accept-Language')
  const override = allowOverride ? parseLocale(stringField(request.query, 'lang')) : null
  return override ?? chooseLocale(request.headers['accept-language'])
}

/** The language of what a request asks to be sent elsewhere (an email), from Accept-Language. */
export function requestLocale(request: FastifyRequest): Locale {
  return chooseLocale(request.headers['accept-language'])
}

/** The same page in every locale: the request's path and query with `lang` set. */
export function languageLinks(request: FastifyRequest): Record<Locale, string> {
  const url = new URL(request.url, 'http://page.invalid')
  const links = {} as Record<Locale, string>
  for (const locale of LOCALES) {
    url.searchParams.set('lang', locale)
    links[locale] = `${url.pathname}${url.search}`
  }
  return links
}
