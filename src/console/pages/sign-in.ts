import type { OperatorRole } from '../../db/schema.js'
import { escapeHtml as e } from '../../lib/html.js'
import { DESCRIBE_PATH } from '../sections.js'
import { consolePage, href, type PageContext } from '../layout.js'
import { timeTag } from '../widgets.js'
import { WORDS } from '../words.js'

const HOW = '<pre><code>campusgate console link --name YOUR-NAME</code></pre>'

/**
 * The sign-in page (docs/console.md, "Signing in"). It never signs in by itself: console.js reads
 * the link's token from the fragment, asks the server whom it signs in as (`data-describe`), and
 * only then adds the button "Sign in as NAME (role)", which the operator presses; it does so again
 * when a link is pasted into this tab (the fragment changes, the page stays). Without a token the
 * page has no button at all: it says how to get a link. `next` is the console page to return to,
 * already checked (routes/sign-in.ts); `held` the session this browser holds, when the request
 * carried its cookie.
 */
export function signInPage(
  context: PageContext,
  options: {
    offerUniversity: boolean
    next: string
    held: { operator: string; role: OperatorRole } | null
  },
): string {
  const words = WORDS[context.locale].signIn
  const university = options.offerUniversity
    ? `<p><a class="button" href="${e(href(context, '/console/sign-in/university', { next: options.next }))}">${e(words.university)}</a></p>`
    : ''
  const held =
    options.held === null
      ? ''
      : `<p class="notice" id="held">${e(words.held(words.as(options.held.operator, words.role[options.held.role])))} <a href="${e(href(context, '/console'))}">${e(words.continue)}</a></p>`
  return consolePage(
    context,
    words.title,
    `${held}<p>${e(words.lead)}</p>
<p id="link-status" role="status" data-checking="${e(words.checking)}" data-failed="${e(words.failed)}"></p>
<form method="post" action="${e(href(context, '/console/sign-in'))}" id="sign-in" data-describe="${e(href(context, DESCRIBE_PATH))}" hidden>
<p id="switching" class="warning" hidden></p>
<input type="hidden" name="token" id="token" value="">
<input type="hidden" name="next" id="next" value="${e(options.next)}">
</form>
<h2>${e(words.getLinkTitle)}</h2>
<p>${e(words.getLink)}</p>
${HOW}
${university}`,
    null,
  )
}

export function invalidLinkPage(context: PageContext): string {
  const words = WORDS[context.locale].signIn
  return consolePage(context, words.invalidTitle, `<p>${e(words.invalid)}</p>${HOW}`, null)
}

/** Over RATE_LIMIT_CONSOLE_SIGN_IN_PER_ADDRESS: when this address may try again. */
export function limitedPage(context: PageContext, seconds: number, now: number): string {
  const words = WORDS[context.locale].signIn
  return consolePage(
    context,
    words.limitedTitle,
    `<p>${e(words.limited(seconds))}</p><p>${e(words.tryAgainAt)} ${timeTag(now + seconds * 1000)}</p>`,
    null,
  )
}

export function refusedPage(context: PageContext): string {
  const words = WORDS[context.locale].signIn
  return consolePage(context, words.refusedTitle, `<p>${e(words.refused)}</p>`, null)
}

/**
 * After the provider's redirect: the console cookie is SameSite=Strict, so a redirect chain that
 * began on the provider's site would arrive without it. This page, on our own site, moves on.
 */
export function continuePage(context: PageContext, next: string): string {
  const words = WORDS[context.locale].signIn
  return consolePage(
    context,
    words.continueTitle,
    `<p><a class="button" href="${e(next)}" id="continue">${e(words.continue)}</a></p>`,
    null,
  ).replace('<head>', `<head><meta http-equiv="refresh" content="0;url=${e(next)}">`)
}
