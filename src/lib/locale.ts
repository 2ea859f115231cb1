/** The languages the pages people see are written in; the first is the default. */
export const LOCALES = ['en', 'zh-CN'] as const
export type Locale = (typeof LOCALES)[number]
export const DEFAULT_LOCALE: Locale = 'en'

/** One text (or set of texts) per locale: every page module keeps its own. */
export type Catalogue<T> = Readonly<Record<Locale, T>>

/** How each language names itself, for the language switch. */
export const LANGUAGE_NAMES: Catalogue<string> = { en: 'English', 'zh-CN': '中文' }

/** The other locales, in catalogue order. */
export function otherLocales(locale: Locale): Locale[] {
  return LOCALES.filter((other) => other !== locale)
}

/**
 * The locale a language tag asks for. Every Chinese tag (zh, zh-CN, zh-Hans, zh-SG, zh-TW…)
 * gets Simplified Chinese: for a reader of Chinese it is closer than English, the only other
 * choice. `*` and unknown languages give `null`.
 */
function localeOfTag(tag: string): Locale | null {
  const primary = tag.toLowerCase().split('-')[0]
  if (primary === 'zh') return 'zh-CN'
  if (primary === 'en') return 'en'
  return null
}

/** `?lang=` as the language switch writes it (`en`, `zh-CN`, any case), or `null`. */
export function parseLocale(value: unknown): Locale | null {
  if (typeof value !== 'string') return null
  return LOCALES.find((locale) => locale.toLowerCase() === value.toLowerCase()) ?? null
}

const Q_VALUE = /^q=(0(\.\d{0,3})?|1(\.0{0,3})?)$/i

/**
 * The best locale for an Accept-Language header (RFC 9110, section 12.5.4): ranges by
 * descending q, in header order on ties; the first we speak wins. `q=0` is a refusal, a range
 * with a malformed q is ignored; nothing we speak, or no header at all, gives English.
 */
export function chooseLocale(acceptLanguage: string | undefined): Locale {
  if (acceptLanguage === undefined) return DEFAULT_LOCALE
  const ranges: { tag: string; q: number; order: number }[] = []
  const refused = new Set<Locale>()
  acceptLanguage.split(',').forEach((part, order) => {
    const [rawTag = '', ...params] = part.split(';').map((piece) => piece.trim())
    if (rawTag === '') return
    const qParam = params.find((param) => /^q=/i.test(param))
    if (qParam !== undefined && !Q_VALUE.test(qParam)) return
    const q = qParam === undefined ? 1 : Number(qParam.slice(2))
    if (q > 0) ranges.push({ tag: rawTag, q, order })
    else if (localeOfTag(rawTag) !== null) refused.add(localeOfTag(rawTag)!)
  })
  ranges.sort((a, b) => b.q - a.q || a.order - b.order)
  for (const { tag } of ranges) {
    // `*` is any language not named otherwise; a refused one is not among them.
    if (tag === '*') return LOCALES.find((locale) => !refused.has(locale)) ?? DEFAULT_LOCALE
    const locale = localeOfTag(tag)
    if (locale !== null) return locale
  }
  return DEFAULT_LOCALE
}
