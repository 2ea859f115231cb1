import type { FastifyInstance, FastifyRequest } from 'fastify'
import { stringField } from '../../lib/coerce.js'
import { pageNumber } from '../../lib/paging.js'
import { CONSOLE_HEADERS } from '../guard.js'
import { usersPage, userPage } from '../pages/users.js'
import { readUniversityIdentity, type UserQuery, type UserTier } from '../reads.js'
import { pageUsers } from '../users-list.js'
import { operatorOrigin } from '../service.js'
import { WORDS } from '../words.js'
import { PAGE, type SectionOptions } from './options.js'

const TIERS: readonly string[] = ['none', 'messenger-registered', 'university-registered']

/**
 * Users: the list (filtered, sorted, searched), a user's page and its actions — the command
 * line's service calls, each audited with the operator's name.
 */
export function usersRoutes(app: FastifyInstance, options: SectionOptions): void {
  const { accounts, access, auditTrail, webhookEvents, db, clock, kit } = options

  app.get('/users', PAGE, async (request, reply) => {
    const ctx = kit.context(request, reply)
    const tier = stringField(request.query, 'tier')
    const query: UserQuery = {
      search: stringField(request.query, 'q').trim().slice(0, 320),
      tier: TIERS.includes(tier) ? (tier as UserTier) : null,
      sort: stringField(request.query, 'sort') === 'active' ? 'active' : 'created',
    }
    const list = await pageUsers(db, query, {
      now: clock.now().getTime(),
      linkMaxAgeMs: options.linkMaxAgeMs,
      page: pageNumber(stringField(request.query, 'page')),
    })
    return kit.page(
      reply,
      200,
      usersPage(ctx, query, list, kit.done(request, WORDS[ctx.locale].users.done)),
    )
  })

  app.get<{ Params: { openId: string } }>('/users/:openId', PAGE, async (request, reply) => {
    const ctx = kit.context(request, reply)
    const user = await accounts.overview(request.params.openId)
    if (user === null) {
      const none = { rows: [], total: 0, page: 1 }
      const query: UserQuery = { search: request.params.openId, tier: null, sort: 'created' }
      return kit.page(reply, 404, usersPage(ctx, query, none, WORDS[ctx.locale].users.notFound))
    }
    const [university, trail, events] = await Promise.all([
      readUniversityIdentity(db, user.id),
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
        pageNumber(stringField(request.query, 'trail')),
      ),
      webhookEvents.page(
        { state: null, endpoint: null, userId: user.id },
        pageNumber(stringField(request.query, 'events')),
      ),
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
          university,
          universityLinkedAt: user.universityLinkedAt?.getTime() ?? null,
          sessions: user.sessions,
          trail,
          events,
        },
        kit.done(request, WORDS[ctx.locale].users.done),
      ),
    )
  })

  const origin = (request: FastifyRequest) =>
    operatorOrigin(request.consoleSession!.operator, request.ip)
  const userPath = (openId: string) => `/console/users/${encodeURIComponent(openId)}`

  // One session by its id, or every one with `all`; a form without the field ends nothing.
  app.post<{ Params: { openId: string } }>(
    '/users/:openId/revoke',
    PAGE,
    async (request, reply) => {
      const { openId } = request.params
      const session = stringField(request.body, 'session')
      const which = session === 'all' ? 'all' : session === '' ? null : { sessionId: session }
      const ended =
        which === null ? 0 : await accounts.revoke({ openId, which, origin: origin(request) })
      const done =
        typeof ended !== 'number' || ended === 0
          ? 'nothing'
          : which === 'all'
            ? 'revokedAll'
            : 'revoked'
      return kit.back(request, reply, userPath(openId), done)
    },
  )

  app.post<{ Params: { openId: string } }>(
    '/users/:openId/unlink',
    PAGE,
    async (request, reply) => {
      const { openId } = request.params
      const outcome = await accounts.unlink({ openId, origin: origin(request) })
      return kit.back(
        request,
        reply,
        userPath(openId),
        outcome === 'unlinked' ? 'unlinked' : 'nothing',
      )
    },
  )

  app.post<{ Params: { openId: string } }>('/users/:openId/erase', PAGE, async (request, reply) => {
    const { openId } = request.params
    // The operator types the openId: a slip of the mouse erases nobody.
    if (stringField(request.body, 'confirm') !== openId) {
      return kit.back(request, reply, userPath(openId), 'mismatch')
    }
    const erased = await accounts.erase({ openId, origin: origin(request) })
    return kit.back(request, reply, '/console/users', erased ? 'erased' : 'nothing')
  })

  // "Download data": the access document, as GET /user/data and `campusgate users export` give it.
  app.post<{ Params: { openId: string } }>('/users/:openId/data', PAGE, async (request, reply) => {
    const { openId } = request.params
    const document = await access.export({ openId }, origin(request))
    if (document === null) return kit.back(request, reply, '/console/users', 'nothing')
    const name = `campusgate-${openId.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64)}.json`
    return reply
      .code(200)
      .headers(CONSOLE_HEADERS)
      .header('content-disposition', `attachment; filename="${name}"`)
      .type('application/json; charset=utf-8')
      .send(JSON.stringify(document, null, 2))
  })
}
