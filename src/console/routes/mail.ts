import type { FastifyInstance } from 'fastify'
import { stringField } from '../../lib/coerce.js'
import { pageNumber } from '../../lib/paging.js'
import { mailPage } from '../pages/mail.js'
import { WORDS } from '../words.js'
import { PAGE, type SectionOptions } from './options.js'

/** Mail: queued and abandoned confirmation mail, and making queued mail due now. */
export function mailRoutes(app: FastifyInstance, options: SectionOptions): void {
  const { outbox, consoleSessions, clock, kit } = options

  app.get('/mail', PAGE, async (request, reply) => {
    const ctx = kit.context(request, reply)
    const state = stringField(request.query, 'state') === 'dead' ? 'dead' : 'pending'
    const list = await outbox.page(
      { state: state === 'dead' ? 'abandoned' : 'queued' },
      pageNumber(stringField(request.query, 'page')),
    )
    const count = stringField(request.query, 'done')
    const message = /^\d{1,6}$/.test(count) ? WORDS[ctx.locale].mail.done(Number(count)) : null
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
    return kit.back(request, reply, '/console/mail', String(due))
  })
}
