import type { FastifyBaseLogger } from 'fastify'
import type { Kysely } from 'kysely'
import type { Clock } from '../clock.js'
import type { Dialect } from '../db/database.js'
import type { Database } from '../db/schema.js'
import { describeError } from '../lib/describe-error.js'
import { retryDelayMs, type Backoff } from '../lib/outbox.js'
import { createPeriodicJob, type PeriodicJob } from '../lib/periodic-job.js'
import {
  claimDueDelivery,
  markDead,
  markDelivered,
  scheduleDeliveryRetry,
  type ClaimedDelivery,
} from './outbox.js'
import type { Signer } from './signer.js'

/** `runOnce` makes every try that is due now and returns how many were delivered. */
export type WebhookWorker = PeriodicJob<number>

export type TryOutcome = 'delivered' | 'failed' | 'dead'

export interface WebhookWorkerOptions {
  db: Kysely<Database>
  dialect: Dialect
  /** Schedules tries and decides when an event is dead. */
  clock: Clock
  /**
   * Stamps `webhook-timestamp`: receivers compare it with their own clock (standardwebhooks
   * refuses one five minutes off), so it is the machine's time whatever `clock` says.
   */
  wallClock?: Clock
  fetch: typeof fetch
  sign: Signer
  log: FastifyBaseLogger
  /** Told how each try ended, for the metrics. */
  onTry?: (outcome: TryOutcome) => void
  /** WEBHOOK_RETRY_FOR: how long after its first try a delivery is tried again. */
  retryForMs: number
  /** A try not answered 2xx within this is abandoned (docs/webhooks.md: 10 s). */
  tryTimeoutMs: number
  pollIntervalMs?: number
  /** How long a claimed try stays invisible to other workers; longer than a try can take. */
  lockMs?: number
  /** The first retry comes after about this (docs/webhooks.md: within 30 s); each next one 4 times later. */
  firstRetryMs?: number
  maxRetryMs?: number
  /** How many tries are in flight at once, so one slow endpoint does not stall the rest. */
  concurrency?: number
  /** Stands in for Math.random in the jitter (tests pin it). */
  random?: () => number
}

/** Where a log line may name the endpoint: its origin, never a path or query that may hold a token. */
function originOf(endpoint: string): string {
  try {
    return new URL(endpoint).origin
  } catch {
    return 'invalid'
  }
}

export function createWebhookWorker(options: WebhookWorkerOptions): WebhookWorker {
  const { db, dialect, clock, log, sign } = options
  const wallClock = options.wallClock ?? { now: () => new Date() }
  const pollIntervalMs = options.pollIntervalMs ?? 1000
  const lockMs = options.lockMs ?? options.tryTimeoutMs + 30_000
  // ×4 from about 10 s (docs/webhooks.md: the first within 30 s), capped at 6 h, with ±25 % jitter so that
  // receivers that failed together are not retried in lockstep.
  const backoff: Backoff = {
    firstMs: options.firstRetryMs ?? 10_000,
    maxMs: options.maxRetryMs ?? 6 * 3_600_000,
    factor: 4,
    jitter: 0.25,
  }
  const concurrency = options.concurrency ?? 4
  const random = options.random ?? Math.random

  /** One POST; `null` when the endpoint answered 2xx in time, else why not. */
  async function post(endpoint: string, eventId: string, body: string): Promise<string | null> {
    try {
      const response = await options.fetch(endpoint, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'campusgate-webhooks',
          ...sign(eventId, wallClock.now(), body),
        },
        body,
        // A redirect is not delivery (as Stripe and Svix treat it): the URL is the operator's to fix.
        redirect: 'manual',
        signal: AbortSignal.timeout(options.tryTimeoutMs),
      })
      // Only the status matters; the answer's body is never read.
      await response.body?.cancel().catch(() => undefined)
      return response.status >= 200 && response.status < 300 ? null : `HTTP ${response.status}`
    } catch (error) {
      if ((error as Error).name === 'TimeoutError') {
        return `no answer within ${options.tryTimeoutMs / 1000} s`
      }
      const cause = (error as { cause?: unknown }).cause
      return describeError(cause ?? error, 200)
    }
  }

  async function attempt({ delivery, body }: ClaimedDelivery): Promise<boolean> {
    const claim = { id: delivery.id, attempts: delivery.attempts }
    const failure = await post(delivery.endpoint, delivery.event_id, body)
    const now = clock.now().getTime()
    const about = {
      eventId: delivery.event_id,
      endpoint: originOf(delivery.endpoint),
      attempt: delivery.attempts,
    }
    if (failure === null) {
      await markDelivered(db, claim, now)
      log.info(about, 'webhook delivered')
      options.onTry?.('delivered')
      return true
    }
    if (now >= delivery.retry_until) {
      await markDead(db, claim, now, failure)
      log.error(
        { ...about, reason: failure },
        'webhook event dead: no 2xx within WEBHOOK_RETRY_FOR (campusgate events retry ID)',
      )
      options.onTry?.('dead')
      return false
    }
    const retryAt = Math.min(
      delivery.retry_until,
      now + retryDelayMs(delivery.attempts, backoff, random),
    )
    await scheduleDeliveryRetry(db, claim, retryAt, failure)
    log.warn({ ...about, reason: failure, retryAt: new Date(retryAt) }, 'webhook try failed')
    options.onTry?.('failed')
    return false
  }

  /** Claims and tries, one at a time, until nothing is due. */
  async function lane(): Promise<number> {
    let delivered = 0
    for (;;) {
      const claimed = await claimDueDelivery(
        db,
        dialect,
        clock.now().getTime(),
        lockMs,
        options.retryForMs,
      )
      if (claimed === null) return delivered
      if (await attempt(claimed)) delivered += 1
    }
  }

  async function drain(): Promise<number> {
    // Every lane finishes before the round does, even when one fails (the database is down).
    const lanes = await Promise.allSettled(Array.from({ length: concurrency }, lane))
    const failed = lanes.find((result) => result.status === 'rejected')
    if (failed !== undefined) throw failed.reason
    return lanes.reduce(
      (sum, result) => sum + (result.status === 'fulfilled' ? result.value : 0),
      0,
    )
  }

  return createPeriodicJob(drain, {
    intervalMs: pollIntervalMs,
    log,
    name: 'webhook worker',
    runOnStart: true,
  })
}
