import Fastify, { type FastifyInstance } from 'fastify'
import type { Clock } from '../clock.js'
import { acceptJsonBodiesOnly, BODY_LIMIT_BYTES } from '../http/media-type.js'
import { createSandboxMessenger, messengerRoutes, SANDBOX_APP, sandboxApps } from './messenger.js'
import { sendHtml } from '../http/html.js'
import { languageLinks, pageLocale } from '../http/locale.js'
import { readAsset } from '../lib/assets.js'
import { escapeHtml, htmlPage } from '../lib/html.js'
import type { Catalogue, Locale } from '../lib/locale.js'
import { mailboxRoutes, type SandboxMailbox } from './mailbox.js'
import { casRoutes } from './cas.js'
import { oidcRoutes } from './oidc.js'
import { samlRoutes } from './saml.js'
import { playground } from './playground.js'
import { universityRoutes } from './university.js'

export { SANDBOX_APP }

export interface SandboxOptions {
  /** Serve the simulated messenger platform. */
  messenger: boolean
  /** MESSENGER_APP_PLATFORMS: the apps it simulates besides its own WeChat app, by platform. */
  messengerApps?: ReadonlyMap<string, string>
  /** Serve the simulated identity provider. */
  university: boolean
  /** Which protocol it speaks: the UCL-API round trip (default), OpenID Connect, CAS or SAML. */
  universityProtocol?: 'uclapi' | 'oidc' | 'cas' | 'saml'
  /** The only client_id the identity provider accepts. */
  clientId: string
  /** Its secret. */
  clientSecret: string
  /** Where the identity provider sends the browser back (campusgate's callback). */
  callbackUrl: () => string
  /** SAML: campusgate's SP entity id (default `${PUBLIC_BASE_URL}/authorize/university/saml`). */
  samlSpEntityId?: () => string
  /**
   * Where the sandbox itself is reached when it is served apart from campusgate (a server of its
   * own, on another site); by default campusgate's own base URL.
   */
  selfUrl?: () => string
  /** All expiries use `clock.now()`. */
  clock: Clock
  /** What the service's mail transport delivered; with it the home page is a playground. */
  mailbox?: SandboxMailbox
}

const PREFIX = '/_sandbox'
/** The playground's browser script (assets/playground.js), served at /_sandbox/playground.js. */
const PLAYGROUND_SCRIPT = readAsset('playground.js')
const CALLBACK_PATH = '/authorize/university/callback'

/** The service's base URL as the walk-through shows it, derived from the callback URL. */
function baseUrlOf(callbackUrl: string): string {
  if (callbackUrl.endsWith(CALLBACK_PATH)) return callbackUrl.slice(0, -CALLBACK_PATH.length)
  try {
    return new URL(callbackUrl).origin
  } catch {
    return 'http://127.0.0.1:3000'
  }
}

const HOME: Catalogue<{
  title: string
  simulates: (parts: string) => string
  and: string
  messenger: string
  university: string
  curl: string
  endpoints: string
}> = {
  en: {
    title: 'campusgate sandbox',
    simulates: (parts) =>
      `This server simulates ${parts}, in memory, so the whole registration flow works offline. Nothing here exists when <code>NODE_ENV=production</code>.`,
    and: ' and ',
    messenger: 'a messenger platform (WeChat <code>code2session</code>)',
    university: 'a university identity provider (UCL-API-style OAuth)',
    curl: 'Walk-through',
    endpoints: 'Endpoints',
  },
  'zh-CN': {
    title: 'campusgate 沙盒',
    simulates: (parts) =>
      `本服务器在内存中模拟${parts}，整个注册流程无需联网即可走通。设置 <code>NODE_ENV=production</code> 时这里的一切都不存在。`,
    and: '和',
    messenger: '消息平台（微信 <code>code2session</code>）',
    university: '大学身份提供方（UCL-API 风格的 OAuth）',
    curl: '用 curl 走一遍',
    endpoints: '接口',
  },
}

function homePage(options: SandboxOptions, locale: Locale, links: Record<Locale, string>): string {
  const words = HOME[locale]
  const base = escapeHtml(baseUrlOf(options.callbackUrl()))
  const parts = [
    options.messenger ? words.messenger : null,
    options.university ? words.university : null,
  ].filter((part) => part !== null)
  const app = `"appId":"${SANDBOX_APP.appId}","appSecret":"${SANDBOX_APP.appSecret}"`
  const withPlayground = options.messenger && options.university && options.mailbox !== undefined
  return htmlPage(
    words.title,
    `<p>${words.simulates(parts.join(words.and))}</p>
${withPlayground ? playground(locale) : ''}
<h2>${words.curl}</h2>
<pre>BASE=${base}

# 1. Mint a messenger login code, as wx.login() hands one to the mini-program.
#    Send {"openId":"..."} to log in as the same user again.
curl -s -X POST $BASE${PREFIX}/messenger/login-codes

# 2. Tier 1: register with that code; the answer carries your sessionKey.
curl -s $BASE/register/messenger -H 'content-type: application/json' \\
  -d '{${escapeHtml(app)},"code":"CODE"}'

# 3. Tier 2: ask for the confirmation email.
curl -s $BASE/register/university -H 'authorization: SESSION_KEY' \\
  -H 'content-type: application/json' -d '{"email":"you@example.org"}'

# 4. Open the emailed link in a browser (without SMTP_URL the email is a .eml file
#    in ./data/outbox and the link is in the log), then press Allow or Deny.

# 5. See your tier.
curl -s $BASE/session -H 'authorization: SESSION_KEY'</pre>
<h2>${words.endpoints}</h2>
<ul>
<li><code>POST ${PREFIX}/messenger/login-codes</code>: a single-use login code, valid 5 minutes</li>
<li><code>GET ${PREFIX}/messenger/sns/jscode2session</code>: WeChat's code2session</li>
<li><code>GET ${PREFIX}/messenger/qq/sns/jscode2session</code>, <code>POST ${PREFIX}/messenger/douyin/api/apps/v2/jscode2session</code>:
QQ's and Douyin's, for the apps <code>MESSENGER_APP_PLATFORMS</code> lists (mint their codes with <code>{"appId":"..."}</code>)</li>
${withPlayground ? `<li><code>GET ${PREFIX}/mailbox?to=</code>: the mails this server delivered to an address, newest first</li>` : ''}
<li><code>GET ${PREFIX}/university/authorise?client_id=&amp;state=</code>: the Allow / Deny page</li>
<li><code>GET ${PREFIX}/university/token?code=&amp;client_id=&amp;client_secret=</code>: token exchange</li>
<li><code>GET ${PREFIX}/university/user/data?token=&amp;client_secret=</code>: who signed in (UCL-API user data)</li>
<li>With <code>UNIVERSITY_PROTOCOL=oidc</code> the identity provider is an OpenID Provider instead,
issuer <code>${PREFIX}/oidc</code> (discovery at <code>${PREFIX}/oidc/.well-known/openid-configuration</code>)</li>
<li>With <code>UNIVERSITY_PROTOCOL=cas</code> it is a CAS server at <code>${PREFIX}/cas</code>
(<code>login</code>, <code>serviceValidate</code>, <code>p3/serviceValidate</code>)</li>
<li>With <code>UNIVERSITY_PROTOCOL=saml</code> it is a SAML 2.0 identity provider, metadata at
<code>${PREFIX}/saml/metadata</code> (single sign-on at <code>${PREFIX}/saml/sso</code>)</li>
</ul>`,
    {
      locale,
      languageLinks: links,
      ...(withPlayground ? { scripts: [`${PREFIX}/playground.js`] } : {}),
    },
  )
}

/** The sandbox's routes, in their own encapsulated context. */
async function sandboxPlugin(app: FastifyInstance, options: SandboxOptions): Promise<void> {
  // The authorise page's form posts urlencoded; the main app accepts only JSON elsewhere.
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string' },
    (_request, body: string, done) => done(null, Object.fromEntries(new URLSearchParams(body))),
  )

  app.get(
    '/',
    { config: { versionedMediaType: false }, schema: { hide: true } },
    async (request, reply) => {
      const locale = pageLocale(request, reply)
      const html = homePage(options, locale, languageLinks(request))
      return sendHtml(reply, 200, html, { runsScript: options.mailbox !== undefined })
    },
  )
  if (options.mailbox !== undefined) {
    mailboxRoutes(app, options.mailbox)
    app.get(
      '/playground.js',
      { config: { versionedMediaType: false }, schema: { hide: true } },
      async (_request, reply) =>
        reply
          .header('cache-control', 'no-store')
          .header('x-content-type-options', 'nosniff')
          .type('text/javascript; charset=utf-8')
          .send(PLAYGROUND_SCRIPT),
    )
  }
  if (options.messenger) {
    const apps = sandboxApps(options.messengerApps ?? new Map<string, string>())
    messengerRoutes(app, createSandboxMessenger(options.clock, apps))
  }
  if (!options.university) return
  if (options.universityProtocol === 'oidc') {
    oidcRoutes(app, {
      ...options,
      issuer: () => `${baseUrlOf(options.callbackUrl())}${PREFIX}/oidc`,
    })
  } else if (options.universityProtocol === 'cas') casRoutes(app, options)
  else if (options.universityProtocol === 'saml') {
    samlRoutes(app, {
      ...options,
      entityId: () => `${options.selfUrl?.() ?? baseUrlOf(options.callbackUrl())}${PREFIX}/saml`,
      spEntityId:
        options.samlSpEntityId ??
        (() => `${baseUrlOf(options.callbackUrl())}/authorize/university/saml`),
    })
  } else universityRoutes(app, options)
}

/** Register inside an encapsulated context with prefix '/_sandbox'. */
export function sandboxRoutes(app: FastifyInstance, options: SandboxOptions): void {
  void app.register(sandboxPlugin, { ...options, prefix: PREFIX })
}

/** A standalone server for tests: a fresh Fastify with sandboxRoutes under /_sandbox. */
export async function createSandboxServer(options: SandboxOptions): Promise<FastifyInstance> {
  const app = Fastify({ logger: false, bodyLimit: BODY_LIMIT_BYTES })
  // As in the main app: JSON only (an empty body is no body), plus the sandbox's own form parser.
  acceptJsonBodiesOnly(app)
  sandboxRoutes(app, options)
  await app.ready()
  return app
}
