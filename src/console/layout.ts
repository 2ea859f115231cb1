import type { OperatorRole } from '../db/schema.js'
import { escapeHtml } from '../lib/html.js'
import { LANGUAGE_NAMES, otherLocales, type Locale } from '../lib/locale.js'
import { SECTIONS, SECTION_HREF, type Section } from './sections.js'
import { WORDS } from './words.js'

export type { Section }

/** What every page knows: who, with what role, the CSRF token its forms carry, the language. */
export interface PageContext {
  locale: Locale
  /** The language the page was asked in by `?lang=`: every link and redirect carries it on. */
  lang: Locale | null
  /** This page in each language (the switch). */
  languageLinks: Record<Locale, string>
  operator: string | null
  role: OperatorRole | null
  csrf: string | null
  /** The asset files' addresses, content-hashed (routes/assets.ts). */
  assets: { css: string; js: string }
  /**
   * This view (path and query, without the notice of an earlier action): every action's form
   * carries it as `back`, and the action returns to it (routes/kit.ts). '' outside the console.
   */
  here: string
}

/**
 * A console address with its query, carrying the page's language on: `params` left out when
 * null or empty.
 */
export function href(
  context: PageContext,
  path: string,
  params: Record<string, string | number | null | undefined> = {},
): string {
  const query = new URLSearchParams()
  for (const [name, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== '') query.set(name, String(value))
  }
  if (context.lang !== null) query.set('lang', context.lang)
  const text = query.toString()
  return text === '' ? path : `${path}?${text}`
}

/** Whether the operator may act: actions are drawn for admins alone (and refused to others). */
export function canAct(context: PageContext): boolean {
  return context.role === 'admin'
}

/** The hidden field every state-changing form carries. */
export function csrfField(context: PageContext): string {
  return context.csrf === null
    ? ''
    : `<input type="hidden" name="csrf" value="${escapeHtml(context.csrf)}">`
}

/**
 * A form with one button that POSTs to `action` (with the CSRF token, the page's language, the
 * view to return to and any hidden fields); nothing for an operator who may not act.
 */
export function actionButton(
  context: PageContext,
  action: string,
  label: string,
  fields: Record<string, string> = {},
  className = '',
): string {
  if (!canAct(context)) return ''
  const back: Record<string, string> = context.here === '' ? {} : { back: context.here }
  const hidden = Object.entries({ ...back, ...fields })
    .map(([name, value]) => `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`)
    .join('')
  return `<form method="post" action="${escapeHtml(href(context, action))}" class="inline">${csrfField(context)}${hidden}<button type="submit"${className === '' ? '' : ` class="${className}"`}>${escapeHtml(label)}</button></form>`
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
  const links = SECTIONS.map(
    (section) =>
      `<li><a href="${escapeHtml(href(context, SECTION_HREF[section]))}"${section === current ? ' aria-current="page"' : ''}>${escapeHtml(words.nav[section])}</a></li>`,
  ).join('')
  // Signing out is no action on anyone's data: every role may.
  const signOut = `<li><form method="post" action="${escapeHtml(href(context, '/console/sign-out'))}" class="inline">${csrfField(context)}<button type="submit" class="link">${escapeHtml(words.nav.signOut)}</button></form></li>`
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
      : `<p class="who">${escapeHtml(words.signedInAs)} <strong>${escapeHtml(context.operator)}</strong> · <span class="role">${escapeHtml(words.roles[context.role ?? 'viewer'])}</span></p>`
  return `<!doctype html>
<html lang="${context.locale}">
<head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · ${escapeHtml(words.console)}</title>
<link rel="stylesheet" href="${context.assets.css}">
<script src="${context.assets.js}" defer></script>
</head>
<body>
<a class="skip" href="#main">${escapeHtml(words.skip)}</a>
<header class="bar"><a class="brand" href="${escapeHtml(href(context, '/console'))}">${escapeHtml(words.console)}</a>${languageSwitch(context)}${who}</header>
${context.operator === null ? '' : navigation(context, current)}
<main id="main" tabindex="-1">
<h1>${escapeHtml(title)}</h1>
${body}
</main>
</body>
</html>
`
}
