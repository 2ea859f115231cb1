import { escapeHtml } from '../lib/html.js'
import { LANGUAGE_NAMES, otherLocales, type Locale } from '../lib/locale.js'
import { SECTIONS, SECTION_HREF, type Section } from './sections.js'
import { WORDS } from './words.js'

export type { Section }

/** What every signed-in page knows: who, the CSRF token its forms carry, the language. */
export interface PageContext {
  locale: Locale
  /** This page in each language (the switch). */
  languageLinks: Record<Locale, string>
  operator: string | null
  csrf: string | null
}

/** The hidden field every state-changing form carries. */
export function csrfField(context: PageContext): string {
  return context.csrf === null
    ? ''
    : `<input type="hidden" name="csrf" value="${escapeHtml(context.csrf)}">`
}

/** A form with one button that POSTs to `action` (with the CSRF token and any hidden fields). */
export function actionButton(
  context: PageContext,
  action: string,
  label: string,
  fields: Record<string, string> = {},
  className = '',
): string {
  const hidden = Object.entries(fields)
    .map(([name, value]) => `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`)
    .join('')
  return `<form method="post" action="${escapeHtml(action)}" class="inline">${csrfField(context)}${hidden}<button type="submit"${className === '' ? '' : ` class="${className}"`}>${escapeHtml(label)}</button></form>`
}

function languageSwitch(context: PageContext): string {
  const others = otherLocales(context.locale).map(
    (locale) =>
      `<a href="${escapeHtml(context.languageLinks[locale])}" hreflang="${locale}" lang="${locale}">${LANGUAGE_NAMES[locale]}</a>`,
  )
  return `<nav class="lang" aria-label="Language / 语言"><span aria-current="true">${LANGUAGE_NAMES[context.locale]}</span>${others.join('')}</nav>`
}

function navigation(context: PageContext, current: Section | null): string {
  const words = WORDS[context.locale]
  const lang = context.locale === 'en' ? '' : `?lang=${context.locale}`
  const links = SECTIONS.map(
    (section) =>
      `<li><a href="${SECTION_HREF[section]}${lang}"${section === current ? ' aria-current="page"' : ''}>${escapeHtml(words.nav[section])}</a></li>`,
  ).join('')
  const signOut = `<li>${actionButton(context, '/console/sign-out', words.nav.signOut, {}, 'link')}</li>`
  return `<nav class="sections" aria-label="${escapeHtml(words.console)}"><ul>${links}${signOut}</ul></nav>`
}

/**
 * A console page: its style sheet and script are files this origin serves (the console's CSP
 * forbids anything inline); `body` must already be escaped.
 */
export function consolePage(
  context: PageContext,
  title: string,
  body: string,
  current: Section | null,
): string {
  const words = WORDS[context.locale]
  const who =
    context.operator === null
      ? ''
      : `<p class="who">${escapeHtml(words.signedInAs)} <strong>${escapeHtml(context.operator)}</strong></p>`
  return `<!doctype html>
<html lang="${context.locale}">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · ${escapeHtml(words.console)}</title>
<link rel="stylesheet" href="/console/assets/console.css">
<script src="/console/assets/console.js" defer></script>
</head>
<body>
<header class="bar"><a class="brand" href="/console${context.locale === 'en' ? '' : `?lang=${context.locale}`}">${escapeHtml(words.console)}</a>${languageSwitch(context)}</header>
${context.operator === null ? '' : navigation(context, current)}
<main id="main">
<h1>${escapeHtml(title)}</h1>
${who}${body}
</main>
</body>
</html>
`
}
