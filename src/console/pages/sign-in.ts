import { escapeHtml as e } from '../../lib/html.js'
import { consolePage, href, type PageContext } from '../layout.js'
import { timeTag } from '../widgets.js'
import { WORDS } from '../words.js'

const HOW = '<pre><code>campusgate console link --name YOUR-NAME</code></pre>'

/**
 * The sign-in page: console.js posts the link's token from the fragment, on load and when a link
 * is pasted into this tab (the fragment changes, the page stays). `next` is the console page to
 * return to, already checked (routes/sign-in.ts).
 */
export function signInPage(context: PageContext, offerUniversity: boolean, next: string): string {
  const words = WORDS[context.locale].signIn
  const university = offerUniversity
    ? `<p><a class="button" href="${e(href(context, '/console/sign-in/university', { next }))}">${e(words.university)}</a></p>`
    : ''
  return consolePage(
    context,
    words.title,
    `<p>${e(words.lead)}</p>
<form method="post" action="${e(href(context, '/console/sign-in'))}" id="sign-in" class="hidden-until-token">
<input type="hidden" name="token" id="token" value="">
<input type="hidden" name="next" id="next" value="${e(next)}">
<button type="submit">${e(words.button)}</button>
</form>
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
