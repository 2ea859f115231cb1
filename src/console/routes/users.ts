import type { FastifyInstance, FastifyRequest } from 'fastify'
import { stringField } from '../../lib/coerce.js'
import { usersPage, userPage } from '../pages.js'
import { eventsOfUser, filterAudit, readUniversityIdentity, searchUsers } from '../reads.js'
import { operatorOrigin } from '../service.js'
import { WORDS } from '../words.js'
import { PAGE, type SectionOptions } from './options.js'

/** Users: the search, a user's page and its actions (the command line's service calls). */
export function usersRoutes(app: FastifyInstance, options: SectionOptions): void {
  const { accounts, db, kit } = options

  app.get('/users', PAGE, async (request, reply) => {
    const query = stringField(request.query, 'q').trim().slice(0, 320)
    const found = query === '' ? null : await searchUsers(db, query)
    const ctx = kit.context(request, reply)
    return kit.page(
      reply,
      200,
      usersPage(ctx, query, found, kit.done(request, WORDS[ctx.locale].users.done)),
    )
  })

  app.get<{ Params: { openId: string } }>('/users/:openId', PAGE, async (request, reply) => {
    const ctx = kit.context(request, reply)
    const user = await accounts.overview(request.params.openId)
    if (user === null) {
      return kit.page(
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
    return kit.page(
      reply,
      200,
      userPage(
        ctx,
        {
          id: user.id,
          openId: user.openId,
          createdAt: user.createdAt.getTime(),
          session: user.session,
          university,
          universityLinkedAt: user.universityLinkedAt?.getTime() ?? null,
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

  app.post<{ Params: { openId: string } }>(
    '/users/:openId/revoke',
    PAGE,
    async (request, reply) => {
      const { openId } = request.params
      const outcome = await accounts.revoke({ openId, origin: origin(request) })
      return kit.back(
        request,
        reply,
        userPath(openId),
        outcome === 'revoked' ? 'revoked' : 'nothing',
      )
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
}
