import type { FastifyInstance } from 'fastify'
import type { Db } from '../db/database.js'

/**
 * How long requests already in flight get after SIGTERM or SIGINT. Every outbound call has its
 * own shorter timeout, so only a client that sends or reads too slowly is ever cut off.
 */
export const SHUTDOWN_GRACE_MS = 10_000

/** After the grace, how long the background jobs and the database pool get to stop. */
export const SHUTDOWN_FORCE_MS = 5_000

export interface ShutdownBounds {
  graceMs: number
  forceMs: number
}

/**
 * Stops the service on SIGTERM or SIGINT: no new connection is accepted, idle keep-alive
 * connections close, requests in flight finish and are answered, then the background jobs stop
 * and the database pool closes. Connections still open after the grace are cut, and the process
 * exits 1 if stopping takes longer still, so a supervisor's stop always completes.
 */
export function stopOnSignals(
  app: FastifyInstance,
  db: Db,
  bounds: ShutdownBounds = { graceMs: SHUTDOWN_GRACE_MS, forceMs: SHUTDOWN_FORCE_MS },
): void {
  let closing = false
  const shutdown = (signal: string): void => {
    if (closing) return
    closing = true
    app.log.info({ signal, graceMs: bounds.graceMs }, 'shutting down')
    let forced = false
    // A keep-alive connection whose request finishes after the signal turns idle only then.
    const idle = setInterval(() => app.server.closeIdleConnections(), 100)
    const grace = setTimeout(() => {
      forced = true
      clearInterval(idle)
      app.log.warn(
        { graceMs: bounds.graceMs },
        'shutdown grace over: closing the connections still open',
      )
      app.server.closeAllConnections()
      setTimeout(() => {
        app.log.error({ forceMs: bounds.forceMs }, 'shutdown did not complete: exiting')
        process.exit(1)
      }, bounds.forceMs)
    }, bounds.graceMs)
    app
      .close()
      .then(() => db.kysely.destroy())
      .then(
        () => {
          clearTimeout(grace)
          clearInterval(idle)
          process.exit(forced ? 1 : 0)
        },
        (error: unknown) => {
          app.log.error({ err: error }, 'shutdown failed')
          process.exit(1)
        },
      )
  }
  process.on('SIGINT', () => shutdown('SIGINT'))
  process.on('SIGTERM', () => shutdown('SIGTERM'))
}
