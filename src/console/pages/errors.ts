import { escapeHtml as e } from '../../lib/html.js'
import { consolePage, type PageContext } from '../layout.js'
import { WORDS } from '../words.js'

export function notFoundPage(context: PageContext): string {
  const words = WORDS[context.locale]
  return consolePage(context, words.notFoundTitle, `<p>${e(words.notFound)}</p>`, null)
}

export function csrfPage(context: PageContext): string {
  const words = WORDS[context.locale]
  return consolePage(context, words.csrfTitle, `<p>${e(words.csrf)}</p>`, null)
}

/** A viewer's request for an action (`@forbidden/operator-role`). */
export function rolePage(context: PageContext): string {
  const words = WORDS[context.locale]
  return consolePage(context, words.roleTitle, `<p>${e(words.role)}</p>`, null)
}
