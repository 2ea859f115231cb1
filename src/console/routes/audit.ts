import type { FastifyInstance, FastifyRequest } from 'fastify'
import { isAuditEventType, type AuditCursor, type AuditQuery } from '../../audit/audit.js'
import { stringField } from '../../lib/coerce.js'
import { pageNumber, pageWithin } from '../../lib/paging.js'
import { csvAttachment, csvDownload, isoTime } from '../csv.js'
import { existingOpenIds } from '../reads.js'
import { auditPage, type AuditForm } from '../pages/audit.js'
import { PAGE, type SectionOptions } from './options.js'

const DAY_MS = 86_400_000

/** Epoch ms of a UTC day ('YYYY-MM-DD') plus `plus`; null for anything else. */
function day(text: string, plus: number): number | null {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return null
  const ms = Date.parse(`${text}T00:00:00Z`)
  return Number.isNaN(ms) ? null : ms + plus
}

/** The filter of the audit page and its download, as the form sends it. */
function auditFilter(request: FastifyRequest): { form: AuditForm; query: AuditQuery } {
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
  return {
    form,
    query: {
      openId: orNull(form.openId),
      type: isAuditEventType(form.type) ? form.type : null,
      actor: orNull(form.actor),
      ip: orNull(form.ip),
      since: day(form.since, 0),
      // `until` is inclusive of its day.
      until: day(form.until, DAY_MS),
    },
  }
}

/** How many events a batch of the download reads. */
const DOWNLOAD_BATCH = 1000

/** The audit trail, filtered by user, type, operator, address and time, page by page; its download. */
export function auditRoutes(app: FastifyInstance, options: SectionOptions): void {
  const { auditTrail, consoleSessions, db, clock, kit } = options

  app.get('/audit', PAGE, async (request, reply) => {
    const { form, query } = auditFilter(request)
    const list = await pageWithin(pageNumber(stringField(request.query, 'page')), (page) =>
      auditTrail.page(query, page),
    )
    const existing = await existingOpenIds(
      db,
      list.rows.map((row) => row.open_id),
    )
    return kit.page(reply, 200, auditPage(kit.context(request, reply), form, list, existing))
  })

  // Every page of what the filter shows (docs/console.md, "Downloads"); the trail holds no
  // secret. Audited, as every export is.
  app.get('/audit.csv', PAGE, async (request, reply) => {
    const { form, query } = auditFilter(request)
    const filter = Object.fromEntries(Object.entries(form).filter(([, value]) => value !== ''))
    await consoleSessions.recordAction(request.consoleSession!, request.ip, {
      action: 'download-audit',
      ...filter,
    })
    const header = ['at', 'type', 'actor', 'openId', 'ip', 'detail']
    return csvAttachment(reply, 'audit', clock.now()).send(
      csvDownload(header, async (after: AuditCursor | null) => {
        const rows = await auditTrail.before(query, after, DOWNLOAD_BATCH)
        const last = rows[rows.length - 1]
        return {
          next: rows.length < DOWNLOAD_BATCH || last === undefined ? null : last,
          rows: rows.map((row) => [
            isoTime(Number(row.at)),
            row.type,
            row.actor,
            row.open_id ?? '',
            row.ip ?? '',
            row.detail ?? '',
          ]),
        }
      }),
    )
  })
}
