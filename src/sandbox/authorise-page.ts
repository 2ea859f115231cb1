import type { FastifyReply, FastifyRequest } from 'fastify'
import { sendHtml } from '../http/html.js'
import { languageLinks, pageLocale } from '../http/locale.js'
import { escapeHtml, htmlPage } from '../lib/html.js'
import type { Catalogue } from '../lib/locale.js'
import { memberChoices } from './members.js'

const TEXT: Catalogue<{
  title: string
  asks: (client: string, protocol: string) => string
  noPassword: string
  allow: string
  deny: string
}> = {
  en: {
    title: 'University sign-in (sandbox)',
    asks: (client, protocol) =>
      `The application <strong>${client}</strong> asks to confirm that you are a member of the university${protocol}.`,
    noPassword:
      'This is the sandbox identity provider: no password is asked, your choice is all it takes.',
    allow: 'Allow',
    deny: 'Deny',
  },
  'zh-CN': {
    title: '大学登录（沙盒）',
    asks: (client, protocol) => `应用 <strong>${client}</strong> 请求确认你是本校成员${protocol}。`,
    noPassword: '这是沙盒身份提供方：不需要密码，你的选择就是全部。',
    allow: '允许',
    deny: '拒绝',
  },
}

export interface AuthorisePage {
  clientId: string
  /** Where the form posts the decision. */
  action: string
  /** The request's parameters, carried to the decision as hidden fields. */
  hidden: readonly (readonly [string, string])[]
  protocol: 'uclapi' | 'oidc' | 'cas' | 'saml'
}

/** How the page names the protocol it speaks (the UCL-API round trip is unnamed). */
const PROTOCOL_NAMES = { uclapi: '', oidc: ' (OpenID Connect)', cas: ' (CAS)', saml: ' (SAML 2.0)' }

/** The simulated identity provider's Allow / Deny page, in the browser's language. */
export function sendAuthorisePage(
  request: FastifyRequest,
  reply: FastifyReply,
  page: AuthorisePage,
): FastifyReply {
  const locale = pageLocale(request, reply)
  const text = TEXT[locale]
  const hidden = page.hidden
    .map(([name, value]) => `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`)
    .join('\n')
  // The buttons keep their English values: they are the provider's protocol, not its wording.
  const protocol = PROTOCOL_NAMES[page.protocol]
  const body = `<p>${text.asks(escapeHtml(page.clientId), protocol)}</p>
<p class="note">${text.noPassword}</p>
<form method="post" action="${page.action}" enctype="application/x-www-form-urlencoded">
${hidden}
${memberChoices(locale)}
<button type="submit" name="decision" value="allow">${text.allow}</button>
<button type="submit" name="decision" value="deny">${text.deny}</button>
</form>`
  const html = htmlPage(text.title, body, { locale, languageLinks: languageLinks(request) })
  return sendHtml(reply, 200, html)
}

/** A refused request to the simulated identity provider; the reason stays in English. */
export function sendAuthoriseProblem(
  request: FastifyRequest,
  reply: FastifyReply,
  problem: string,
): FastifyReply {
  const locale = pageLocale(request, reply)
  const html = htmlPage(TEXT[locale].title, `<p>${escapeHtml(problem)}</p>`, { locale })
  return sendHtml(reply, 400, html)
}
