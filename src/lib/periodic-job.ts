import type { FastifyBaseLogger } from 'fastify'

/** Background work that runs in rounds: on a timer, on request, and by hand in tests. */
export interface PeriodicJob<T> {
  /** Runs a round; a call during a round runs right after it, one round at a time. */
  runOnce(): Promise<T>
  /** Asks for a round soon (ignored unless started). */
  kick(): void
  start(): void
  /** Stops the timer and waits for the round in progress. */
  stop(): Promise<void>
}

export interface PeriodicJobOptions {
  intervalMs: number
  log: FastifyBaseLogger
  /** Names the job in the error logged when a round fails. */
  name: string
  /** Also run a round as soon as the job starts. */
  runOnStart: boolean
}

export function createPeriodicJob<T>(
  round: () => Promise<T>,
  options: PeriodicJobOptions,
): PeriodicJob<T> {
  let running: Promise<T | undefined> = Promise.resolve(undefined)
  let timer: NodeJS.Timeout | null = null
  let stopped = true

  function runOnce(): Promise<T> {
    const next = running.catch(() => undefined).then(round)
    running = next
    return next
  }

  function tick(): void {
    // A tick queued by kick() or start() may fire after stop(): it must not start a round then.
    if (stopped) return
    runOnce().catch((error: unknown) =>
      options.log.error({ err: error }, `${options.name} round failed`),
    )
  }

  return {
    runOnce,
    kick() {
      if (!stopped) setImmediate(tick)
    },
    start() {
      stopped = false
      timer = setInterval(tick, options.intervalMs)
      timer.unref()
      if (options.runOnStart) setImmediate(tick)
    },
    async stop() {
      stopped = true
      if (timer !== null) clearInterval(timer)
      timer = null
      await running.catch(() => undefined)
    },
  }
}
