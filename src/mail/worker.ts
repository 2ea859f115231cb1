import type { FastifyBaseLogger } from 'fastify'
import type { Kysely } from 'kysely'
import type { Clock } from '../clock.js'
import type { Dialect } from '../db/database.js'
import type { Database, MailOutboxRow } from '../db/schema.js'
import { createPeriodicJob, type PeriodicJob } from '../lib/periodic-job.js'
import { describeError } from '../lib/describe-error.js'
import { retryDelayMs, type Backoff } from '../lib/outbox.js'
import { claimDueMail, markMailAbandoned, markMailSent, scheduleMailRetry } from './outbox.js'
import type { Cipher } from '../lib/encryption.js'
import { openMail } from './sealed.js'
import type { Mail, MailTransport } from './transport.js'

/** `runOnce` delivers every mail that is due now and returns how many were sent. */
export type MailWorker = PeriodicJob<number>

export interface MailWorkerOptions {
  db: Kysely<Database>
  dialect: Dialect
  clock: Clock
  transport: MailTransport
  /** Opens the sealed bodies (see sealed.ts). */
  cipher: Cipher
  log: FastifyBaseLogger
  /** Told how each delivery attempt ended, for the metrics. */
  onDelivery?: (outcome: 'sent' | 'failed' | 'abandoned') => void
  pollIntervalMs?: number
  /** How long a claimed mail stays invisible to other workers. */
  lockMs?: number
  baseBackoffMs?: number
  maxBackoffMs?: number
}

export function createMailWorker(options: MailWorkerOptions): MailWorker {
  const { db, dialect, clock, transport, log, cipher } = options
  const pollIntervalMs = options.pollIntervalMs ?? 1000
  const lockMs = options.lockMs ?? 60_000
  // Doubling from 2 s, capped at 5 minutes; one relay per instance, so no jitter is needed.
  const backoff: Backoff = {
    firstMs: options.baseBackoffMs ?? 2000,
    maxMs: options.maxBackoffMs ?? 5 * 60_000,
    factor: 2,
    jitter: 0,
  }

  async function deliver(row: MailOutboxRow, now: number): Promise<boolean> {
    const claim = { id: row.id, attempts: row.attempts }
    if (row.expires_at <= now || row.text_body === null || row.html_body === null) {
      await markMailAbandoned(db, claim, now)
      log.warn(
        { mailId: row.id, attempts: row.attempts - 1 },
        'mail abandoned: its link expired before delivery',
      )
      options.onDelivery?.('abandoned')
      return false
    }
    let mail: Mail
    try {
      mail = openMail(cipher, {
        to: row.recipient,
        subject: row.subject,
        text: row.text_body,
        html: row.html_body,
      })
    } catch {
      // Sealed with a key that is no longer configured: it can never be sent.
      await markMailAbandoned(db, claim, now)
      log.warn({ mailId: row.id }, 'mail abandoned: no configured key opens it')
      options.onDelivery?.('abandoned')
      return false
    }
    try {
      await transport.send(mail, row.id)
    } catch (error) {
      const retryAt = clock.now().getTime() + retryDelayMs(row.attempts, backoff)
      const reason = describeError(error)
      await scheduleMailRetry(db, claim, retryAt, reason)
      log.warn(
        { mailId: row.id, attempt: row.attempts, retryAt: new Date(retryAt), reason },
        'mail delivery failed',
      )
      options.onDelivery?.('failed')
      return false
    }
    await markMailSent(db, claim, clock.now().getTime())
    log.info({ mailId: row.id, attempt: row.attempts }, 'mail sent')
    options.onDelivery?.('sent')
    return true
  }

  async function drain(): Promise<number> {
    let sent = 0
    for (;;) {
      const now = clock.now().getTime()
      const row = await claimDueMail(db, dialect, now, lockMs)
      if (row === null) return sent
      if (await deliver(row, now)) sent += 1
    }
  }

  return createPeriodicJob(drain, {
    intervalMs: pollIntervalMs,
    log,
    name: 'mail worker',
    runOnStart: true,
  })
}
