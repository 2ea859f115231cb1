import type { FastifyInstance } from 'fastify'
import { dayLabel } from '../charts.js'
import { overviewPage } from '../pages/overview.js'
import { readFigures } from '../reads.js'
import { PAGE, type SectionOptions } from './options.js'

/** The overview: figures and charts read from the database, so every instance shows the same. */
export function overviewRoutes(app: FastifyInstance, options: SectionOptions): void {
  const { webhookEvents, db, clock, kit } = options

  app.get('', PAGE, async (request, reply) => {
    const now = clock.now().getTime()
    const [figures, webhooks] = await Promise.all([
      readFigures(db, now, options.linkMaxAgeMs),
      webhookEvents.backlogByEndpoint(),
    ])
    const { days } = figures.newUsers
    const active = await options.sessions.activeUsersByDay(dayLabel(days[0]))
    const byDay = new Map(active.map((row) => [row.day, row.users]))
    const activeUsers = { days, values: days.map((day) => byDay.get(dayLabel(day)) ?? 0) }
    const ready = await options.checkReady().then(
      () => true,
      () => false,
    )
    return kit.page(
      reply,
      200,
      overviewPage(kit.context(request, reply), {
        figures,
        webhooks,
        activeUsers,
        now,
        ready,
        backupsOn: options.newestBackupAt !== null,
        newestBackupAt: options.newestBackupAt?.() ?? null,
      }),
    )
  })
}
