import type { FastifyInstance } from 'fastify'
import { isAuditEventType } from '../../audit/audit.js'
import { stringField } from '../../lib/coerce.js'
import { pageNumber } from '../../lib/paging.js'
import { auditPage, type AuditForm } from '../pages/audit.js'
import { PAGE, type SectionOptions } from './options.js'

const DAY_MS = 86_400_000

/** Epoch ms of a UTC day ('YYYY-MM-DD') plus `plus`; null for anything else. */
function day(text: string, plus: number): number | null {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return null
  const ms = Date.parse(`${text}T00:00:00Z`)
  return Number.isNaN(ms) ? null : ms + plus
}

/** The audit trail, filtered by user, type, operator, address and time, page by page. */
export function auditRoutes(app: FastifyInstance, options: SectionOptions): void {
  const { auditTrail, kit } = options

  app.get('/audit', PAGE, async (request, reply) => {
    const field = (name: string) => stringField(request.query, name).trim().slice(0, 256)
    const form: AuditForm = {
      openId: field('openId'),
      type: field('type'),
      actor: field('actor'),
      ip: field('ip'),
      since: field('since'),
      until: field('until'),
    }
    const orNull = (text: string) => (text === '' ? null : text)
    const list = await auditTrail.page(
      {
        openId: orNull(form.openId),
        type: isAuditEventType(form.type) ? form.type : null,
        actor: orNull(form.actor),
        ip: orNull(form.ip),
        since: day(form.since, 0),
        // `until` is inclusive of its day.
        until: day(form.until, DAY_MS),
      },
      pageNumber(stringField(request.query, 'page')),
    )
    return kit.page(reply, 200, auditPage(kit.context(request, reply), form, list))
  })
}
