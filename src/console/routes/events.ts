import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { WebhookDeliveryState } from '../../db/schema.js'
import { stringField } from '../../lib/coerce.js'
import { pageNumber, pageWithin } from '../../lib/paging.js'
import { eventsPage } from '../pages/events.js'
import { existingOpenIds } from '../reads.js'
import { WORDS } from '../words.js'
import { PAGE, type SectionOptions } from './options.js'

const DEAD = '/console/events?state=dead'

/** An endpoint's key as pages carry it (events/listing.ts), or undefined. */
function endpointKey(source: unknown): string | undefined {
  const key = stringField(source, 'endpoint')
  return /^[0-9a-f]{16}$/.test(key) ? key : undefined
}

/**
 * Lifecycle events per endpoint: listed by the state of their deliveries, retried, replayed, and
 * an endpoint's dead ones retried at once (`campusgate events …`). Each action is audited.
 */
export function eventsRoutes(app: FastifyInstance, options: SectionOptions): void {
  const { webhookEvents, consoleSessions, db, kit } = options
  const record = (request: FastifyRequest, detail: Record<string, string | number>) =>
    consoleSessions.recordAction(request.consoleSession!, request.ip, detail)

  app.get('/events', PAGE, async (request, reply) => {
    const ctx = kit.context(request, reply)
    const raw = stringField(request.query, 'state')
    const state: WebhookDeliveryState = raw === 'dead' || raw === 'delivered' ? raw : 'pending'
    const endpoint = endpointKey(request.query) ?? null
    const [endpoints, list] = await Promise.all([
      webhookEvents.backlogByEndpoint(),
      pageWithin(pageNumber(stringField(request.query, 'page')), (page) =>
        webhookEvents.page({ state, endpoint, userId: null }, page),
      ),
    ])
    const existing = await existingOpenIds(
      db,
      list.rows.map((event) => event.openId),
    )
    return kit.page(
      reply,
      200,
      eventsPage(
        ctx,
        { state, endpoint },
        endpoints,
        list,
        existing,
        kit.done(request, WORDS[ctx.locale].events.done),
      ),
    )
  })

  // Each returns to the view its form came from (state, endpoint, page, language) and says how
  // many deliveries it changed.
  app.post<{ Params: { id: string } }>('/events/:id/retry', PAGE, async (request, reply) => {
    const endpoint = endpointKey(request.body)
    const outcome = await webhookEvents.retry(request.params.id, endpoint)
    if (outcome === 'retried') {
      await record(request, { action: 'event-retry', eventId: request.params.id })
    }
    const retried = outcome === 'retried'
    return kit.back(request, reply, DEAD, retried ? 'retried' : 'nothing', retried ? 1 : 0)
  })

  app.post<{ Params: { id: string } }>('/events/:id/replay', PAGE, async (request, reply) => {
    const endpoint = endpointKey(request.body)
    const outcome = await webhookEvents.replay(request.params.id, endpoint)
    if (outcome === 'replayed') {
      await record(request, { action: 'event-replay', eventId: request.params.id })
    }
    const replayed = outcome === 'replayed'
    return kit.back(
      request,
      reply,
      '/console/events?state=delivered',
      replayed ? 'replayed' : 'nothing',
      replayed ? 1 : 0,
    )
  })

  app.post('/events/retry-all', PAGE, async (request, reply) => {
    const endpoint = endpointKey(request.body)
    const retried = endpoint === undefined ? 0 : await webhookEvents.retryAllDead(endpoint)
    if (retried > 0) {
      await record(request, { action: 'event-retry-all', endpoint: endpoint!, deliveries: retried })
    }
    // Without a view to return to: the dead deliveries of the endpoint it retried.
    const fallback = endpoint === undefined ? DEAD : `${DEAD}&endpoint=${endpoint}`
    return kit.back(request, reply, fallback, retried > 0 ? 'retriedAll' : 'nothing', retried)
  })
}
