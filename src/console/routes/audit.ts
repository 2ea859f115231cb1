import type { FastifyInstance } from 'fastify'
import { AUDIT_EVENT_TYPES, isAuditEventType } from '../../audit/audit.js'
import { stringField } from '../../lib/coerce.js'
import { auditPage } from '../pages.js'
import { filterAudit } from '../reads.js'
import { PAGE, type SectionOptions } from './options.js'

/** The audit trail, filtered. */
export function auditRoutes(app: FastifyInstance, options: SectionOptions): void {
  const { db, kit } = options

  app.get('/audit', PAGE, async (request, reply) => {
    const ctx = kit.context(request, reply)
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
      type: isAuditEventType(filter.type) ? filter.type : null,
      since: day(filter.since, 0),
      // `until` is inclusive of its day.
      until: day(filter.until, 86_400_000),
      limit: 200,
    })
    return kit.page(reply, 200, auditPage(ctx, filter, AUDIT_EVENT_TYPES, rows))
  })
}
