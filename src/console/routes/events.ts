import type { FastifyInstance } from 'fastify'
import type { WebhookDeliveryState } from '../../db/schema.js'
import { stringField } from '../../lib/coerce.js'
import { eventsPage } from '../pages.js'
import { WORDS } from '../words.js'
import { PAGE, type SectionOptions } from './options.js'

/** Lifecycle events: listed by state, retried and replayed (`campusgate events …`). */
export function eventsRoutes(app: FastifyInstance, options: SectionOptions): void {
  const { webhookEvents, consoleSessions, kit } = options

  app.get('/events', PAGE, async (request, reply) => {
    const ctx = kit.context(request, reply)
    const raw = stringField(request.query, 'state')
    const state: WebhookDeliveryState = raw === 'dead' || raw === 'delivered' ? raw : 'pending'
    const events = await webhookEvents.list({ state, limit: 100 })
    return kit.page(
      reply,
      200,
      eventsPage(ctx, state, events, kit.done(request, WORDS[ctx.locale].events.done)),
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
    return kit.back(
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
    return kit.back(
      request,
      reply,
      '/console/events?state=delivered',
      outcome === 'replayed' ? 'replayed' : 'nothing',
    )
  })
}
