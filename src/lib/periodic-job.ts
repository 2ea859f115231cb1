import type { FastifyBaseLogger } from 'fastify'
import { retryDelayMs } from './outbox.js'

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

const MAX_BACKOFF_MS = 60_000

export function createPeriodicJob<T>(
  round: () => Promise<T>,
  options: PeriodicJobOptions,
): PeriodicJob<T> {
  let running: Promise<T | undefined> = Promise.resolve(undefined)
  let timer: NodeJS.Timeout | null = null
  let stopped = true
  // After failed rounds (the database is down), timer rounds pause, doubling up to MAX_BACKOFF_MS,
  // so an outage costs a log line a backoff instead of one a second.
  let failures = 0
  let pausedUntil = 0
  // Kicks before the round they asked for has begun ask for the same round: a loop of changes
  // (the pruner's expiries) wakes the job once, not once a change.
  let kicked = false

  function runOnce(): Promise<T> {
    const next = running.catch(() => undefined).then(round)
    running = next
    return next
  }

  function tick(): void {
    // A tick queued by kick() or start() may fire after stop(): it must not start a round then.
    if (stopped || Date.now() < pausedUntil) return
    runOnce().then(
      () => {
        if (failures > 0)
          options.log.info(`${options.name} recovered after ${failures} failed rounds`)
        failures = 0
        pausedUntil = 0
      },
      (error: unknown) => {
        failures += 1
        const pauseMs = retryDelayMs(failures, {
          firstMs: options.intervalMs,
          maxMs: MAX_BACKOFF_MS,
          factor: 2,
          jitter: 0,
        })
        pausedUntil = Date.now() + pauseMs
        options.log.warn(
          { err: error, failures, retryInMs: pauseMs },
          `${options.name} round failed`,
        )
      },
    )
  }

  return {
    runOnce,
    kick() {
      if (stopped || kicked) return
      kicked = true
      setImmediate(() => {
        kicked = false
        tick()
      })
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
