import { Webhook } from 'standardwebhooks'
import type { Client } from './client.js'
import type { EventType, WebhookEvent } from './events.js'

/** One handler per event type; an event of a type without one is acknowledged and ignored. */
export type WebhookHandlers = {
  [T in EventType]?: (event: WebhookEvent<T>) => unknown
}

/**
 * Where the ids of handled deliveries are kept, so a delivery campusgate makes again is not
 * handled twice. In memory by default; an app that runs several processes passes one they share
 * (Redis: `has` is `EXISTS`, `add` is `SET id 1 PX ttlMs`).
 */
export interface SeenStore {
  /** Whether `id` was added within its `ttlMs`. */
  has(id: string): boolean | Promise<boolean>
  /** Records `id` as handled, to be forgotten after `ttlMs`. */
  add(id: string, ttlMs: number): void | Promise<void>
}

/** Why a delivery was refused: what `onError` receives. */
export type WebhookRefusalReason =
  | 'missing-headers'
  | 'timestamp-outside-tolerance'
  | 'no-matching-secret'
  | 'not-an-event'
  | 'too-large'

/** A delivery the handler refused (4xx), with why; `message` says what to look at. */
export class WebhookRefusedError extends Error {
  readonly kind = 'webhook-refused'

  constructor(
    readonly reason: WebhookRefusalReason,
    readonly status: number,
    message: string,
  ) {
    super(message)
    this.name = 'WebhookRefusedError'
  }
}

export interface WebhookOptions {
  /** Its cache is dropped for a user on every event of that user, `university.linked` included. */
  client?: Client
  /** `WEBHOOK_SECRET` as campusgate has it (`whsec_...`); several (a list, or comma-separated) while rotating. */
  secret: string | readonly string[]
  /**
   * Called with the verified event `{ id, type, timestamp, data }` (`id` is the `webhook-id`);
   * an exception makes the answer 500 so campusgate tries again.
   */
  on?: WebhookHandlers
  /** Where handled ids are kept for 24 hours (default: in this process's memory). */
  seen?: SeenStore
  /**
   * Hears every refused delivery with its reason: missing headers, a timestamp outside the
   * tolerance (clock skew), no secret matching the signature, a body that is no event, too large.
   * Without it, the first refusal of each reason is a process warning.
   */
  onError?: (refusal: WebhookRefusedError) => void
}

export interface WebhookAnswer {
  status: number
  body: Record<string, unknown>
}

/** The largest event body read; campusgate's are a few hundred bytes. */
export const MAX_EVENT_BYTES = 64 * 1024

/** How long a handled delivery's id is remembered: campusgate tries one event for at most days, a duplicate comes soon. */
export const SEEN_FOR_MS = 24 * 60 * 60 * 1000

/** Standard Webhooks' tolerance, which the `standardwebhooks` package applies too. */
export const TIMESTAMP_TOLERANCE_SECONDS = 5 * 60

/** The most ids the in-memory store holds; the oldest go first (a day of a busy app's events). */
const MEMORY_SEEN_MAX = 100_000

/** The default SeenStore: this process's memory, oldest forgotten first. */
export function memorySeenStore(max = MEMORY_SEEN_MAX): SeenStore {
  const until = new Map<string, number>()
  return {
    has(id) {
      const expiry = until.get(id)
      if (expiry === undefined) return false
      if (expiry > Date.now()) return true
      until.delete(id)
      return false
    },
    add(id, ttlMs) {
      until.delete(id)
      until.set(id, Date.now() + ttlMs)
      // Map keeps insertion order: the first entries are the oldest.
      for (const [oldest, expiry] of until) {
        if (until.size <= max && expiry > Date.now()) break
        until.delete(oldest)
      }
    },
  }
}

/** Verifies and dispatches one delivery; the framework adapters read the body and send the answer. */
export function createWebhookReceiver(
  options: WebhookOptions,
): (
  rawBody: string | Buffer,
  headers: Record<string, string | string[] | undefined>,
) => Promise<WebhookAnswer> {
  const secrets = (typeof options.secret === 'string' ? [options.secret] : [...options.secret])
    .flatMap((secret) => secret.split(','))
    .map((secret) => secret.trim())
    .filter((secret) => secret !== '')
  if (secrets.length === 0) throw new TypeError('webhookHandler: a secret is required')
  const verifiers = secrets.map((secret) => new Webhook(secret))
  const seen = options.seen ?? memorySeenStore()
  const refuse = refusals(options.onError)

  return async function receive(rawBody, headers) {
    if (Buffer.byteLength(rawBody) > MAX_EVENT_BYTES) {
      return refuse('too-large', 413, `event larger than ${MAX_EVENT_BYTES} bytes`)
    }
    const wanted: Record<string, string> = {}
    const missing: string[] = []
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      const value = headers[name]
      if (typeof value === 'string' && value !== '') wanted[name] = value
      else missing.push(name)
    }
    if (missing.length > 0) {
      return refuse('missing-headers', 400, `missing ${missing.join(', ')}`)
    }
    // Checked here, before any signature: a clock off by minutes is told apart from a wrong secret.
    const sentAt = /^\d{1,15}$/.test(wanted['webhook-timestamp'])
      ? Number(wanted['webhook-timestamp'])
      : NaN
    // Whole seconds against whole seconds, as the header carries them.
    const skew = Math.floor(Date.now() / 1000) - sentAt
    if (!(Math.abs(skew) <= TIMESTAMP_TOLERANCE_SECONDS)) {
      return refuse(
        'timestamp-outside-tolerance',
        401,
        Number.isNaN(skew)
          ? 'webhook-timestamp is not a number of seconds'
          : `webhook-timestamp is ${Math.abs(skew)} s ${skew > 0 ? 'behind' : 'ahead of'} this ` +
              `machine's clock (tolerance ${TIMESTAMP_TOLERANCE_SECONDS} s): is either clock off?`,
      )
    }
    const payload = typeof rawBody === 'string' ? rawBody : rawBody.toString('utf8')
    let verified: unknown = undefined
    for (const verifier of verifiers) {
      try {
        verified = verifier.verify(payload, wanted)
        break
      } catch {
        // The next secret, while rotating.
      }
    }
    if (verified === undefined) {
      return refuse(
        'no-matching-secret',
        401,
        `no secret matches the signature (${verifiers.length} tried): is it WEBHOOK_SECRET, ` +
          'and is the body passed on exactly as it came?',
      )
    }
    if (!isEvent(verified)) return refuse('not-an-event', 400, 'not a campusgate event')
    const id = wanted['webhook-id']
    // Any event of a user may change what a check of that user's keys answers.
    options.client?.forgetUser(verified.data.openId)
    // At least once: a delivery already handled (a retry after a lost answer) is acknowledged.
    if (await seen.has(id)) return { status: 200, body: {} }
    const handler = options.on?.[verified.type as EventType] as
      ((event: WebhookEvent) => unknown) | undefined
    if (handler !== undefined) await handler({ id, ...verified })
    await seen.add(id, SEEN_FOR_MS)
    return { status: 200, body: {} }
  }
}

/** Reports a refusal (to onError, or once per reason as a warning) and makes its answer. */
function refusals(onError: WebhookOptions['onError']) {
  const warned = new Set<WebhookRefusalReason>()
  return (reason: WebhookRefusalReason, status: number, message: string): WebhookAnswer => {
    const refusal = new WebhookRefusedError(reason, status, message)
    if (onError !== undefined) {
      try {
        onError(refusal)
      } catch {
        // A failing logger must not change the answer.
      }
    } else if (!warned.has(reason)) {
      warned.add(reason)
      process.emitWarning(`campusgate webhook refused (${reason}): ${message}`, {
        code: 'CAMPUSGATE_WEBHOOK_REFUSED',
      })
    }
    return { status, body: { error: message } }
  }
}

function isEvent(value: unknown): value is Omit<WebhookEvent, 'id'> {
  if (typeof value !== 'object' || value === null) return false
  const { type, timestamp, data } = value as Record<string, unknown>
  return (
    typeof type === 'string' &&
    typeof timestamp === 'string' &&
    typeof data === 'object' &&
    data !== null &&
    typeof (data as Record<string, unknown>).openId === 'string'
  )
}
