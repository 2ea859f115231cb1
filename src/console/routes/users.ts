import type { FastifyInstance, FastifyRequest } from 'fastify'
import { stringField } from '../../lib/coerce.js'
import { parseLocale } from '../../lib/locale.js'
import { pageNumber, pageWithin } from '../../lib/paging.js'
import { csvAttachment, csvDownload, isoTime } from '../csv.js'
import { CONSOLE_HEADERS } from '../guard.js'
import { revokeAllPage, usersPage, userPage } from '../pages/users.js'
import { readUniversityIdentity, type UserQuery, type UserTier } from '../reads.js'
import { operatorOrigin } from '../service.js'
import { pageUsers, usersAfter } from '../users-list.js'
import { WORDS } from '../words.js'
import { viewOf } from './kit.js'
import { PAGE, type SectionOptions } from './options.js'

const TIERS: readonly string[] = ['none', 'messenger-registered', 'university-registered']
/** How many users a batch of the download reads. */
const DOWNLOAD_BATCH = 1000

/** The list's search, tier and order, as its form and its download send them. */
function userQueryOf(request: FastifyRequest): UserQuery {
  const tier = stringField(request.query, 'tier')
  return {
    search: stringField(request.query, 'q').trim().slice(0, 320),
    tier: TIERS.includes(tier) ? (tier as UserTier) : null,
    sort: stringField(request.query, 'sort') === 'active' ? 'active' : 'created',
  }
}

/**
 * Users: the list (filtered, sorted, searched) and its download, a user's page and its actions —
 * the command line's service calls, each audited with the operator's name.
 */
export function usersRoutes(app: FastifyInstance, options: SectionOptions): void {
  const { accounts, access, auditTrail, webhookEvents, outbox, db, clock, kit } = options
  const listTime = () => ({ now: clock.now().getTime(), linkMaxAgeMs: options.linkMaxAgeMs })

  app.get('/users', PAGE, async (request, reply) => {
    const ctx = kit.context(request, reply)
    const query = userQueryOf(request)
    const list = await pageUsers(db, query, {
      ...listTime(),
      page: pageNumber(stringField(request.query, 'page')),
    })
    return kit.page(
      reply,
      200,
      usersPage(ctx, query, list, kit.done(request, WORDS[ctx.locale].users.done)),
    )
  })

  // Every page of what the list's filters show (docs/console.md, "Downloads"): no key, token or
  // hash is in any column. Audited, as reading one user's data is.
  app.get('/users.csv', PAGE, async (request, reply) => {
    const query = userQueryOf(request)
    const at = listTime()
    await options.consoleSessions.recordAction(request.consoleSession!, request.ip, {
      action: 'download-users',
      ...(query.search === '' ? {} : { search: query.search }),
      ...(query.tier === null ? {} : { tier: query.tier }),
      sort: query.sort,
    })
    const header = [
      'openId',
      'unionId',
      'universitySubject',
      'universityEmail',
      'universityName',
      'tier',
      'createdAt',
      'universityLinkedAt',
      'lastActiveDay',
    ]
    return csvAttachment(reply, 'users', clock.now()).send(
      csvDownload(header, async (after: Parameters<typeof usersAfter>[3]) => {
        const batch = await usersAfter(db, query, at, after, DOWNLOAD_BATCH)
        return {
          next: batch.next,
          rows: batch.rows.map((user) => [
            user.openId,
            user.unionId ?? '',
            user.universitySubject ?? '',
            user.universityEmail ?? '',
            user.universityName ?? '',
            user.tier,
            isoTime(user.createdAt),
            isoTime(user.universityLinkedAt),
            user.lastActiveDay ?? '',
          ]),
        }
      }),
    )
  })

  app.get<{ Params: { openId: string } }>('/users/:openId', PAGE, async (request, reply) => {
    const ctx = kit.context(request, reply)
    const user = await accounts.overview(request.params.openId)
    if (user === null) {
      const none = { rows: [], total: 0, page: 1 }
      const query: UserQuery = { search: request.params.openId, tier: null, sort: 'created' }
      const words = WORDS[ctx.locale].users
      return kit.page(reply, 404, usersPage(ctx, query, none, words.notFound))
    }
    const page = (name: string) => pageNumber(stringField(request.query, name))
    const [university, trail, events, mail] = await Promise.all([
      readUniversityIdentity(db, user.id),
      pageWithin(page('trail'), (at) =>
        auditTrail.page(
          {
            openId: user.openId,
            userId: user.id,
            type: null,
            actor: null,
            ip: null,
            since: null,
            until: null,
          },
          at,
        ),
      ),
      pageWithin(page('events'), (at) =>
        webhookEvents.page({ state: null, endpoint: null, userId: user.id }, at),
      ),
      pageWithin(page('mail'), (at) => outbox.page({ state: null, userId: user.id }, at)),
    ])
    return kit.page(
      reply,
      200,
      userPage(
        ctx,
        {
          id: user.id,
          openId: user.openId,
          createdAt: user.createdAt.getTime(),
          tier: user.tier ?? 'none',
          suspension: user.suspension,
          reasonMax: accounts.reasonMax,
          identities: user.identities,
          university,
          universityLinkedAt: user.universityLinkedAt?.getTime() ?? null,
          sessions: user.sessions,
          trail,
          events,
          mail,
        },
        kit.done(request, WORDS[ctx.locale].users.done),
      ),
    )
  })

  const origin = (request: FastifyRequest) =>
    operatorOrigin(request.consoleSession!.operator, request.ip)
  const userPath = (openId: string) => `/console/users/${encodeURIComponent(openId)}`

  // "Revoke all sessions" asks first (docs/console.md, "What each page shows"): this page says what it
  // does to the student, and only its button revokes.
  app.get<{ Params: { openId: string } }>(
    '/users/:openId/revoke-all',
    PAGE,
    async (request, reply) => {
      const ctx = kit.context(request, reply)
      const user = await accounts.overview(request.params.openId)
      if (user === null) return kit.to(request, reply, '/console/users', 'nothing', 0)
      const back = viewOf(stringField(request.query, 'back'))
      return kit.page(
        reply,
        200,
        revokeAllPage(ctx, {
          openId: user.openId,
          sessions: user.sessions.length,
          linked: user.tier === 'university-registered',
          back: back === '' ? userPath(user.openId) : back,
        }),
      )
    },
  )

  // One session by its id, or every one with `all` and the confirmation page's `confirmed`; a
  // form without them ends nothing (all without confirmation: back to the confirmation page).
  app.post<{ Params: { openId: string } }>(
    '/users/:openId/revoke',
    PAGE,
    async (request, reply) => {
      const { openId } = request.params
      const session = stringField(request.body, 'session')
      if (session === 'all' && stringField(request.body, 'confirmed') !== 'yes') {
        const confirm = new URLSearchParams()
        const back = viewOf(stringField(request.body, 'back'))
        if (back !== '') confirm.set('back', back)
        const lang = parseLocale(stringField(request.query, 'lang'))
        if (lang !== null) confirm.set('lang', lang)
        const query = confirm.toString()
        return kit.redirect(
          reply,
          `${userPath(openId)}/revoke-all${query === '' ? '' : `?${query}`}`,
        )
      }
      const which = session === 'all' ? 'all' : session === '' ? null : { sessionId: session }
      const ended =
        which === null ? 0 : await accounts.revoke({ openId, which, origin: origin(request) })
      const count = typeof ended === 'number' ? ended : 0
      const done = count === 0 ? 'nothing' : which === 'all' ? 'revokedAll' : 'revoked'
      return kit.back(request, reply, userPath(openId), done, count)
    },
  )

  app.post<{ Params: { openId: string } }>(
    '/users/:openId/unlink',
    PAGE,
    async (request, reply) => {
      const { openId } = request.params
      const outcome = await accounts.unlink({ openId, origin: origin(request) })
      const unlinked = outcome === 'unlinked'
      return kit.back(
        request,
        reply,
        userPath(openId),
        unlinked ? 'unlinked' : 'nothing',
        unlinked ? 1 : 0,
      )
    },
  )

  // docs/console.md, "Suspending a user": the command line's `users suspend` and `users restore`.
  app.post<{ Params: { openId: string } }>(
    '/users/:openId/suspend',
    PAGE,
    async (request, reply) => {
      const { openId } = request.params
      const reason = stringField(request.body, 'reason')
      const done = await accounts.suspend({ openId, reason, origin: origin(request) })
      if (typeof done === 'object') {
        return kit.back(request, reply, userPath(openId), 'suspended', done.ended)
      }
      const outcome =
        done === 'already'
          ? 'alreadySuspended'
          : done === 'reason-too-long'
            ? 'reasonTooLong'
            : 'nothing'
      return kit.back(request, reply, userPath(openId), outcome, 0)
    },
  )

  app.post<{ Params: { openId: string } }>(
    '/users/:openId/restore',
    PAGE,
    async (request, reply) => {
      const { openId } = request.params
      const done = await accounts.restore({ openId, origin: origin(request) })
      const outcome =
        done === 'restored' ? 'restored' : done === 'not-suspended' ? 'notSuspended' : 'nothing'
      return kit.back(request, reply, userPath(openId), outcome, done === 'restored' ? 1 : 0)
    },
  )

  app.post<{ Params: { openId: string } }>('/users/:openId/erase', PAGE, async (request, reply) => {
    const { openId } = request.params
    // The operator types the openId: a slip of the mouse erases nobody.
    if (stringField(request.body, 'confirm') !== openId) {
      return kit.back(request, reply, userPath(openId), 'mismatch', 0)
    }
    const erased = await accounts.erase({ openId, origin: origin(request) })
    // The user's page is gone: to the list.
    return kit.to(request, reply, '/console/users', erased ? 'erased' : 'nothing', erased ? 1 : 0)
  })

  // "Download data": the access document, as GET /user/data and `campusgate users export` give it.
  app.post<{ Params: { openId: string } }>('/users/:openId/data', PAGE, async (request, reply) => {
    const { openId } = request.params
    // The older history of a paged document: its `next.before` (docs/console.md, "Access requests").
    const field = stringField(request.body, 'before')
    const before = field === '' || !access.isCursor(field) ? null : field
    const document = await access.export({ openId }, origin(request), { before })
    if (document === null) return kit.to(request, reply, '/console/users', 'nothing', 0)
    const name = `campusgate-${openId.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64)}.json`
    return reply
      .code(200)
      .headers(CONSOLE_HEADERS)
      .header('content-disposition', `attachment; filename="${name}"`)
      .type('application/json; charset=utf-8')
      .send(JSON.stringify(document, null, 2))
  })
}
