import cookie from '@fastify/cookie'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Accounts } from '../accounts/users.js'
import type { AuditEventType } from '../audit/audit.js'
import type { Clock } from '../clock.js'
import type { Queryable, WebhookDeliveryState } from '../db/schema.js'
import type { WebhookEvents } from '../events/service.js'
import { languageLinks, pageLocale } from '../http/locale.js'
import { readAsset } from '../lib/assets.js'
import { stringField } from '../lib/coerce.js'
import type { Outbox } from '../mail/outbox-service.js'
import type { Sessions } from '../sessions/service.js'
import type { OidcClient } from '../university/oidc-client.js'
import { universitySignInRoutes } from './university.js'
import { dayLabel } from './charts.js'
import { CONSOLE_HEADERS, consoleCookie, csrfTokenOf, csrfTokenValid, sameOrigin } from './guard.js'
import type { PageContext } from './layout.js'
import {
  auditPage,
  continuePage,
  csrfPage,
  eventsPage,
  invalidLinkPage,
  notFoundPage,
  mailPage,
  overviewPage,
  refusedPage,
  signInPage,
  usersPage,
  userPage,
} from './pages.js'
import {
  deadMail,
  eventsOfUser,
  filterAudit,
  readFigures,
  readUniversityIdentity,
  searchUsers,
} from './reads.js'
import { operatorOrigin, type ConsoleSession, type ConsoleSessions } from './service.js'
import { WORDS } from './words.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The operator's console session; set on every console route but sign-in's. */
    consoleSession: ConsoleSession | null
  }
}

export interface ConsoleRoutesOptions {
  publicBaseUrl: string
  sessions: Pick<Sessions, 'activeUsersByDay'>
  consoleSessions: ConsoleSessions
  accounts: Accounts
  webhookEvents: WebhookEvents
  outbox: Outbox
  db: Queryable
  clock: Clock
  linkMaxAgeMs: number | null
  /** Throws when this instance is not ready (the same check as /readyz). */
  checkReady(): Promise<void>
  /** The university sign-in of CONSOLE_OPERATORS (UNIVERSITY_PROTOCOL=oidc); null: links only. */
  consoleOidc: OidcClient | null
  operators: readonly string[]
  /** Null when this service takes no backups of its own. */
  newestBackupAt: (() => number | null) | null
}

/** What the audit page filters by (audit/audit.ts's AuditEventType). */
const AUDIT_TYPES = [
  'registration',
  'rotation',
  'university-linked',
  'university-denied',
  'university-failed',
  'university-refused',
  'university-unlinked',
  'logout',
  'expiry',
  'erasure',
  'security-configuration',
  'import',
  'console-sign-in',
  'console-sign-in-refused',
  'console-sign-out',
  'console-revoked',
  'console-action',
] as const satisfies readonly AuditEventType[]

const STYLE = readAsset('console.css')
const SCRIPT = readAsset('console.js')
const CSRF_FAILED = '@forbidden/csrf-check-failed'
/** Console pages answer HTML whatever Accept says; the API's media type rules are not theirs. */
const PAGE = { config: { versionedMediaType: false }, schema: { hide: true } } as const

/** Who can use the console, and how: SPEC.md, "Operator console". */
async function consolePlugin(app: FastifyInstance, options: ConsoleRoutesOptions): Promise<void> {
  const { consoleSessions, accounts, webhookEvents, outbox, db, clock } = options
  const cookieSpec = consoleCookie(options.publicBaseUrl)
  const publicOrigin = new URL(options.publicBaseUrl).origin

  await app.register(cookie)
  // Its forms post urlencoded; the API accepts only JSON.
  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string' },
    (_request, body: string, done) => done(null, Object.fromEntries(new URLSearchParams(body))),
  )
  app.decorateRequest('consoleSession', null)

  function context(request: FastifyRequest, reply: FastifyReply): PageContext {
    const value = request.cookies[cookieSpec.name]
    return {
      locale: pageLocale(request, reply),
      languageLinks: languageLinks(request),
      operator: request.consoleSession?.operator ?? null,
      csrf: request.consoleSession === null || value === undefined ? null : csrfTokenOf(value),
    }
  }

  function page(reply: FastifyReply, status: number, html: string): FastifyReply {
    return reply.code(status).headers(CONSOLE_HEADERS).type('text/html; charset=utf-8').send(html)
  }

  const signInHref = '/console/sign-in'

  /** Every console URL but sign-in's and the assets: a session, else 303 to the sign-in page. */
  app.addHook('onRequest', async (request, reply) => {
    const path = request.url.split('?')[0]
    if (
      path === signInHref ||
      path.startsWith(`${signInHref}/university`) ||
      path.startsWith('/console/assets/')
    )
      return
    const value = request.cookies[cookieSpec.name]
    const session = value === undefined ? null : await consoleSessions.validate(value)
    if (session === null) {
      return reply.code(303).headers(CONSOLE_HEADERS).header('location', signInHref).send()
    }
    request.consoleSession = session
  })

  // An address under /console that names no page is a console URL too: without a session it is
  // sent to sign-in like every other (the hook above runs for it), with one it is a page saying so.
  app.setNotFoundHandler((request, reply) => {
    if (request.consoleSession === null) {
      return reply.code(303).headers(CONSOLE_HEADERS).header('location', signInHref).send()
    }
    return page(reply, 404, notFoundPage(context(request, reply)))
  })

  /**
   * Every state-changing request but sign-in: same origin as SPEC says, and the page's CSRF token.
   * After the body is parsed, since the token is a form field.
   */
  app.addHook('preHandler', async (request, reply) => {
    if (request.method !== 'POST' || request.url.split('?')[0] === signInHref) return
    const value = request.cookies[cookieSpec.name] ?? ''
    const origin = request.headers.origin
    const site = request.headers['sec-fetch-site']
    const ok =
      sameOrigin(publicOrigin, origin, typeof site === 'string' ? site : undefined) &&
      csrfTokenValid(value, stringField(request.body, 'csrf'))
    if (ok) return
    const accept = request.headers.accept ?? ''
    if (/json/i.test(accept) && !/text\/html/i.test(accept)) {
      return reply
        .code(403)
        .headers(CONSOLE_HEADERS)
        .type('application/json; charset=utf-8')
        .send(JSON.stringify({ error: CSRF_FAILED }))
    }
    return page(reply, 403, csrfPage(context(request, reply)))
  })

  app.get('/assets/console.css', PAGE, async (_request, reply) =>
    reply
      .headers(CONSOLE_HEADERS)
      .header('cache-control', 'no-cache')
      .type('text/css; charset=utf-8')
      .send(STYLE),
  )
  app.get('/assets/console.js', PAGE, async (_request, reply) =>
    reply
      .headers(CONSOLE_HEADERS)
      .header('cache-control', 'no-cache')
      .type('text/javascript; charset=utf-8')
      .send(SCRIPT),
  )

  app.get('/sign-in', PAGE, async (request, reply) =>
    page(reply, 200, signInPage(context(request, reply), options.consoleOidc !== null)),
  )

  function setSessionCookie(reply: FastifyReply, value: string, endsAt: number): void {
    reply.setCookie(cookieSpec.name, value, {
      httpOnly: true,
      sameSite: 'strict',
      secure: cookieSpec.secure,
      path: '/',
      maxAge: Math.floor((endsAt - clock.now().getTime()) / 1000),
    })
  }

  if (options.consoleOidc !== null) {
    universitySignInRoutes(app, {
      oidc: options.consoleOidc,
      operators: options.operators,
      consoleSessions,
      secureCookies: cookieSpec.secure,
      signedIn(reply, value, endsAt) {
        setSessionCookie(reply, value, endsAt)
        return page(reply, 200, continuePage(context(reply.request, reply)))
      },
      refused: (request, reply) => page(reply, 403, refusedPage(context(request, reply))),
    })
  }

  // The link's token is the proof: no CSRF token, but failed tries count against the address.
  app.post('/sign-in', { ...PAGE, onRequest: app.limitSensitive }, async (request, reply) => {
    const token = stringField(request.body, 'token')
    const signedIn = await consoleSessions.signIn(token, request.ip)
    if (signedIn === null) return page(reply, 401, invalidLinkPage(context(request, reply)))
    setSessionCookie(reply, signedIn.cookie, signedIn.session.endsAt)
    return reply.code(303).headers(CONSOLE_HEADERS).header('location', '/console').send()
  })

  app.post('/sign-out', PAGE, async (request, reply) => {
    await consoleSessions.signOut(request.consoleSession!, request.ip)
    reply.clearCookie(cookieSpec.name, {
      httpOnly: true,
      sameSite: 'strict',
      secure: cookieSpec.secure,
      path: '/',
    })
    return reply.code(303).headers(CONSOLE_HEADERS).header('location', signInHref).send()
  })

  app.get('', PAGE, async (request, reply) => {
    const now = clock.now().getTime()
    const [figures, webhooks] = await Promise.all([
      readFigures(db, now, options.linkMaxAgeMs),
      webhookEvents.backlog(),
    ])
    const { days } = figures.newUsers
    const active = await options.sessions.activeUsersByDay(dayLabel(days[0]))
    const byDay = new Map(active.map((row) => [row.day, row.users]))
    const activeUsers = { days, values: days.map((day) => byDay.get(dayLabel(day)) ?? 0) }
    const ready = await options.checkReady().then(
      () => true,
      () => false,
    )
    return page(
      reply,
      200,
      overviewPage(context(request, reply), {
        figures,
        webhooks,
        activeUsers,
        now,
        ready,
        backupsOn: options.newestBackupAt !== null,
        newestBackupAt: options.newestBackupAt?.() ?? null,
      }),
    )
  })

  /** The notice a page shows after an action redirected to it (`?done=`), from its words. */
  function done<T extends string>(
    request: FastifyRequest,
    texts: Record<T, string>,
  ): string | null {
    const key = stringField(request.query, 'done')
    return Object.hasOwn(texts, key) ? texts[key as T] : null
  }

  /** 303 back to a page after an action, carrying what happened and the page's language. */
  function back(request: FastifyRequest, reply: FastifyReply, path: string, outcome: string) {
    const lang = stringField(request.query, 'lang')
    const url = new URL(path, 'http://console.invalid')
    url.searchParams.set('done', outcome)
    if (lang !== '') url.searchParams.set('lang', lang)
    return reply
      .code(303)
      .headers(CONSOLE_HEADERS)
      .header('location', `${url.pathname}${url.search}`)
      .send()
  }

  app.get('/users', PAGE, async (request, reply) => {
    const query = stringField(request.query, 'q').trim().slice(0, 320)
    const found = query === '' ? null : await searchUsers(db, query)
    const ctx = context(request, reply)
    return page(
      reply,
      200,
      usersPage(ctx, query, found, done(request, WORDS[ctx.locale].users.done)),
    )
  })

  app.get<{ Params: { openId: string } }>('/users/:openId', PAGE, async (request, reply) => {
    const ctx = context(request, reply)
    const user = await accounts.overview(request.params.openId)
    if (user === null) {
      return page(
        reply,
        404,
        usersPage(ctx, request.params.openId, [], WORDS[ctx.locale].users.notFound),
      )
    }
    const [university, trail, events] = await Promise.all([
      readUniversityIdentity(db, user.id),
      filterAudit(db, {
        openId: user.openId,
        userId: user.id,
        type: null,
        since: null,
        until: null,
        limit: 50,
      }),
      eventsOfUser(db, user.id),
    ])
    return page(
      reply,
      200,
      userPage(
        ctx,
        {
          id: user.id,
          openId: user.openId,
          createdAt: user.createdAt.getTime(),
          tier: user.tier,
          sessions: user.sessions,
          university,
          universityLinkedAt: user.universityLinkedAt?.getTime() ?? null,
          trail,
          events,
        },
        done(request, WORDS[ctx.locale].users.done),
      ),
    )
  })

  const origin = (request: FastifyRequest) =>
    operatorOrigin(request.consoleSession!.operator, request.ip)
  const userPath = (openId: string) => `/console/users/${encodeURIComponent(openId)}`

  app.post<{ Params: { openId: string }; Body: { session?: unknown } }>(
    '/users/:openId/revoke',
    PAGE,
    async (request, reply) => {
      const { openId } = request.params
      // One session by its id, or every one with `all`; a form without the field ends nothing.
      const session = request.body?.session
      const which =
        session === 'all' ? 'all' : typeof session === 'string' ? { sessionId: session } : null
      const ended =
        which === null ? 0 : await accounts.revoke({ openId, which, origin: origin(request) })
      const outcome =
        typeof ended !== 'number' || ended === 0
          ? 'nothing'
          : which === 'all'
            ? 'revokedAll'
            : 'revoked'
      return back(request, reply, userPath(openId), outcome)
    },
  )

  app.post<{ Params: { openId: string } }>(
    '/users/:openId/unlink',
    PAGE,
    async (request, reply) => {
      const { openId } = request.params
      const outcome = await accounts.unlink({ openId, origin: origin(request) })
      return back(request, reply, userPath(openId), outcome === 'unlinked' ? 'unlinked' : 'nothing')
    },
  )

  app.post<{ Params: { openId: string } }>('/users/:openId/erase', PAGE, async (request, reply) => {
    const { openId } = request.params
    // The operator types the openId: a slip of the mouse erases nobody.
    if (stringField(request.body, 'confirm') !== openId) {
      return back(request, reply, userPath(openId), 'mismatch')
    }
    const erased = await accounts.erase({ openId, origin: origin(request) })
    return back(request, reply, '/console/users', erased ? 'erased' : 'nothing')
  })

  app.get('/events', PAGE, async (request, reply) => {
    const ctx = context(request, reply)
    const raw = stringField(request.query, 'state')
    const state: WebhookDeliveryState = raw === 'dead' || raw === 'delivered' ? raw : 'pending'
    const events = await webhookEvents.list({ state, limit: 100 })
    return page(
      reply,
      200,
      eventsPage(ctx, state, events, done(request, WORDS[ctx.locale].events.done)),
    )
  })

  app.post<{ Params: { id: string } }>('/events/:id/retry', PAGE, async (request, reply) => {
    const outcome = await webhookEvents.retry(request.params.id)
    if (outcome === 'retried') {
      await consoleSessions.recordAction(request.consoleSession!, request.ip, {
        action: 'event-retry',
        eventId: request.params.id,
      })
    }
    return back(
      request,
      reply,
      '/console/events?state=dead',
      outcome === 'retried' ? 'retried' : 'nothing',
    )
  })

  app.post<{ Params: { id: string } }>('/events/:id/replay', PAGE, async (request, reply) => {
    const outcome = await webhookEvents.replay(request.params.id)
    if (outcome === 'replayed') {
      await consoleSessions.recordAction(request.consoleSession!, request.ip, {
        action: 'event-replay',
        eventId: request.params.id,
      })
    }
    return back(
      request,
      reply,
      '/console/events?state=delivered',
      outcome === 'replayed' ? 'replayed' : 'nothing',
    )
  })

  app.get('/mail', PAGE, async (request, reply) => {
    const ctx = context(request, reply)
    const state = stringField(request.query, 'state') === 'dead' ? 'dead' : 'pending'
    const mails =
      state === 'dead'
        ? await deadMail(db, 100)
        : await outbox.list({ includeFinished: false, limit: 100 })
    const count = stringField(request.query, 'done')
    const message = /^\d{1,6}$/.test(count) ? `${WORDS[ctx.locale].mail.done}${count}` : null
    return page(reply, 200, mailPage(ctx, state, mails, message))
  })

  app.post<{ Params: { id: string } }>('/mail/:id/retry', PAGE, async (request, reply) => {
    const due = await outbox.retry(request.params.id)
    if (due > 0) {
      await consoleSessions.recordAction(request.consoleSession!, request.ip, {
        action: 'mail-retry',
        mailId: request.params.id,
      })
    }
    return back(request, reply, '/console/mail', String(due))
  })

  app.get('/audit', PAGE, async (request, reply) => {
    const ctx = context(request, reply)
    const field = (name: string) => stringField(request.query, name).trim().slice(0, 256)
    const filter = {
      openId: field('openId'),
      type: field('type'),
      since: field('since'),
      until: field('until'),
    }
    const day = (text: string, plus: number): number | null => {
      if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return null
      const ms = Date.parse(`${text}T00:00:00Z`)
      return Number.isNaN(ms) ? null : ms + plus
    }
    const rows = await filterAudit(db, {
      openId: filter.openId === '' ? null : filter.openId,
      type: (AUDIT_TYPES as readonly string[]).includes(filter.type) ? filter.type : null,
      since: day(filter.since, 0),
      // `until` is inclusive of its day.
      until: day(filter.until, 86_400_000),
      limit: 200,
    })
    return page(reply, 200, auditPage(ctx, filter, AUDIT_TYPES, rows))
  })
}

/** The operator console under /console, in its own encapsulated context. */
export async function consoleRoutes(
  app: FastifyInstance,
  options: ConsoleRoutesOptions,
): Promise<void> {
  await app.register(consolePlugin, { ...options, prefix: '/console' })
}
