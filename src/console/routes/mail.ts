import type { FastifyInstance } from 'fastify'
import { stringField } from '../../lib/coerce.js'
import { mailPage } from '../pages.js'
import { deadMail } from '../reads.js'
import { WORDS } from '../words.js'
import { PAGE, type SectionOptions } from './options.js'

/** Mail: queued and abandoned confirmation mail, and making queued mail due now. */
export function mailRoutes(app: FastifyInstance, options: SectionOptions): void {
  const { outbox, consoleSessions, db, kit } = options

  app.get('/mail', PAGE, async (request, reply) => {
    const ctx = kit.context(request, reply)
    const state = stringField(request.query, 'state') === 'dead' ? 'dead' : 'pending'
    const mails =
      state === 'dead'
        ? await deadMail(db, 100)
        : await outbox.list({ includeFinished: false, limit: 100 })
    const count = stringField(request.query, 'done')
    const message = /^\d{1,6}$/.test(count) ? `${WORDS[ctx.locale].mail.done}${count}` : null
    return kit.page(reply, 200, mailPage(ctx, state, mails, message))
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
