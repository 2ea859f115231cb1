import type { FastifyInstance } from 'fastify'
import { stringField } from '../../lib/coerce.js'
import { pageNumber, pageWithin } from '../../lib/paging.js'
import { mailPage } from '../pages/mail.js'
import { WORDS } from '../words.js'
import { PAGE, type SectionOptions } from './options.js'

/** Mail: queued and abandoned confirmation mail, and making queued mail due now. */
export function mailRoutes(app: FastifyInstance, options: SectionOptions): void {
  const { outbox, consoleSessions, clock, kit } = options

  app.get('/mail', PAGE, async (request, reply) => {
    const ctx = kit.context(request, reply)
    const state = stringField(request.query, 'state') === 'dead' ? 'dead' : 'pending'
    const list = await pageWithin(pageNumber(stringField(request.query, 'page')), (page) =>
      outbox.page({ state: state === 'dead' ? 'abandoned' : 'queued' }, page),
    )
    const message = kit.done(request, WORDS[ctx.locale].mail.done)
    return kit.page(reply, 200, mailPage(ctx, state, list, clock.now().getTime(), message))
  })

  app.post<{ Params: { id: string } }>('/mail/:id/retry', PAGE, async (request, reply) => {
    const due = await outbox.retry(request.params.id)
    if (due > 0) {
      await consoleSessions.recordAction(request.consoleSession!, request.ip, {
        action: 'mail-retry',
        mailId: request.params.id,
      })
    }
    return kit.back(request, reply, '/console/mail', due > 0 ? 'retried' : 'nothing', due)
  })
}
