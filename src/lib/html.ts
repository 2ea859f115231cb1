import { readAsset } from './assets.js'
import { DEFAULT_LOCALE, LANGUAGE_NAMES, otherLocales, type Locale } from './locale.js'

const HTML_ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => HTML_ESCAPES[char] ?? char)
}

/** The pages' one style sheet (assets/page.css), inline, as their Content-Security-Policy allows. */
const STYLE = readAsset('page.css')

/** The same page in another language, carried inline (see PageOptions.inlineAlternate). */
export interface AlternatePage {
  locale: Locale
  title: string
  body: string
}

export interface PageOptions {
  /** The page's language (`<html lang>`); English when absent. */
  locale?: Locale
  /** Where this page is in each locale; the switch links to the others. */
  languageLinks?: Partial<Record<Locale, string>>
  /**
   * The page in the other language, inline, shown when the switch is pressed (CSS `:target`,
   * no request): for a page that must not be requested again, such as the callback's.
   */
  inlineAlternate?: AlternatePage
  /** Same-origin scripts; only pages sent with a policy that allows them may name any. */
  scripts?: readonly string[]
}

function languageSwitch(current: Locale, hrefOf: (locale: Locale) => string | undefined): string {
  const items = [
    `<span aria-current="true">${LANGUAGE_NAMES[current]}</span>`,
    ...otherLocales(current).flatMap((locale) => {
      const href = hrefOf(locale)
      return href === undefined
        ? []
        : [
            `<a href="${escapeHtml(href)}" hreflang="${locale}" lang="${locale}">${LANGUAGE_NAMES[locale]}</a>`,
          ]
    }),
  ]
  return items.length < 2
    ? ''
    : `<nav class="lang" aria-label="Language / 语言">${items.join('')}</nav>`
}

function bar(current: Locale, hrefOf: (locale: Locale) => string | undefined): string {
  return `<header class="bar"><span class="brand">campusgate</span>${languageSwitch(current, hrefOf)}</header>`
}

/** A complete page with the title as heading; `body` must already be escaped. */
export function htmlPage(title: string, body: string, options: PageOptions = {}): string {
  const locale = options.locale ?? DEFAULT_LOCALE
  const alternate = options.inlineAlternate
  const altId = alternate === undefined ? '' : `in-${alternate.locale}`
  const hrefOf = (other: Locale): string | undefined =>
    alternate?.locale === other ? `#${altId}` : options.languageLinks?.[other]
  const scripts = (options.scripts ?? [])
    .map((src) => `<script src="${escapeHtml(src)}" defer></script>\n`)
    .join('')
  // The inline alternate's heading is not an h1: the page has one title, in its own language.
  const alternateHtml =
    alternate === undefined
      ? ''
      : `<div class="alt" id="${altId}" lang="${alternate.locale}">
${bar(alternate.locale, (other) => (other === locale ? '#' : undefined))}
<main>
<p class="h1" role="heading" aria-level="1">${escapeHtml(alternate.title)}</p>
${alternate.body}
</main>
</div>
`
  return `<!doctype html>
<html lang="${locale}">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
${scripts}</head>
<body>
<div class="primary">
${bar(locale, hrefOf)}
<main>
<h1>${escapeHtml(title)}</h1>
${body}
</main>
</div>
${alternateHtml}</body>
</html>
`
}
