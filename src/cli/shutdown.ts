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

/** What a stop acts on. */
export interface Stoppable {
  app: FastifyInstance
  db: Db
  /** Makes /readyz answer 503 from now on. */
  stopBeingReady: () => void
  /** SHUTDOWN_DELAY: how long the listener keeps serving after the signal. */
  delayMs: number
}

/**
 * Stops the service on SIGTERM or SIGINT (docs/operations.md, "Stopping"). At once /readyz answers
 * 503, so a load balancer stops sending; the listener keeps serving for the delay, while it does.
 * Then no new connection is accepted, idle keep-alive connections close, requests in flight finish
 * and are answered, the background jobs stop and the database pool closes. Connections still open
 * after the grace are cut, and the process exits 1 if stopping takes longer still, so a
 * supervisor's stop always completes. A second signal during the delay ends the delay.
 */
export function stopOnSignals(
  { app, db, stopBeingReady, delayMs }: Stoppable,
  bounds: ShutdownBounds = { graceMs: SHUTDOWN_GRACE_MS, forceMs: SHUTDOWN_FORCE_MS },
): void {
  let delay: NodeJS.Timeout | null = null
  let closing = false
  const close = (): void => {
    if (closing) return
    closing = true
    if (delay !== null) clearTimeout(delay)
    app.log.info({ graceMs: bounds.graceMs }, 'shutting down: no new connections')
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
  const shutdown = (signal: string): void => {
    if (delay !== null || closing) {
      close()
      return
    }
    stopBeingReady()
    if (delayMs === 0) {
      app.log.info({ signal }, 'stopping')
      close()
      return
    }
    app.log.info({ signal, delayMs }, 'stopping: not ready, serving until the delay is over')
    delay = setTimeout(close, delayMs)
  }
  process.on('SIGINT', () => shutdown('SIGINT'))
  process.on('SIGTERM', () => shutdown('SIGTERM'))
}
