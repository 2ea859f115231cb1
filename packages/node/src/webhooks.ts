import { Webhook, WebhookVerificationError } from 'standardwebhooks'
import type { Client } from './client.js'
import type { EventType, WebhookEvent } from './events.js'

/** One handler per event type; an event of a type without one is acknowledged and ignored. */
export type WebhookHandlers = {
  [T in EventType]?: (event: WebhookEvent<T>) => unknown
}

export interface WebhookOptions {
  /** Its cache is dropped for a user on that user's session.ended, university.unlinked, user.erased. */
  client?: Client
  /** `WEBHOOK_SECRET` as campusgate has it (`whsec_...`); several (a list, or comma-separated) while rotating. */
  secret: string | readonly string[]
  /** Called with the verified event; an exception makes the answer 500 so campusgate tries again. */
  on?: WebhookHandlers
}

export interface WebhookAnswer {
  status: number
  body: Record<string, unknown>
}

/** The largest event body read; campusgate's are a few hundred bytes. */
export const MAX_EVENT_BYTES = 64 * 1024

const DROPS_CACHE = new Set(['session.ended', 'university.unlinked', 'user.erased'])

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

  return async function receive(rawBody, headers) {
    const wanted: Record<string, string> = {}
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      const value = headers[name]
      if (typeof value !== 'string') return { status: 400, body: { error: `missing ${name}` } }
      wanted[name] = value
    }
    const payload = typeof rawBody === 'string' ? rawBody : rawBody.toString('utf8')
    let event: unknown = undefined
    for (const verifier of verifiers) {
      try {
        event = verifier.verify(payload, wanted)
        break
      } catch (error) {
        if (!(error instanceof WebhookVerificationError)) throw error
      }
    }
    if (event === undefined) return { status: 401, body: { error: 'invalid webhook signature' } }
    if (!isEvent(event)) return { status: 400, body: { error: 'not a campusgate event' } }
    if (DROPS_CACHE.has(event.type)) options.client?.forgetUser(event.data.openId)
    const handler = options.on?.[event.type as EventType] as
      ((event: WebhookEvent) => unknown) | undefined
    if (handler !== undefined) await handler(event)
    return { status: 200, body: {} }
  }
}

function isEvent(value: unknown): value is WebhookEvent {
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
