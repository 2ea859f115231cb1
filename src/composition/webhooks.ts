import { createEvents, type Events } from '../events/emitter.js'
import { createWebhookEvents, type WebhookEvents } from '../events/service.js'
import { createSigner } from '../events/signer.js'
import { createWebhookWorker, type WebhookWorker } from '../events/worker.js'
import type { Metrics } from '../operations/metrics.js'
import type { ServicesDeps } from './deps.js'

/** The lifecycle events: where changes write them, the worker delivering them, the operator's view. */
export interface WebhookParts {
  events: Events
  /** Null when WEBHOOK_URL is unset. */
  worker: WebhookWorker | null
  webhookEvents: WebhookEvents
}

export function composeWebhooks(deps: ServicesDeps, metrics: Metrics): WebhookParts {
  const { config, db, clock, log } = deps
  const worker =
    config.webhook.endpoints.length > 0
      ? createWebhookWorker({
          db: db.kysely,
          dialect: db.dialect,
          clock,
          fetch: deps.fetch ?? fetch,
          sign: createSigner(config.webhook.secrets),
          retryForMs: config.webhook.retryForMs,
          tryTimeoutMs: config.webhook.tryTimeoutMs,
          pollIntervalMs: config.webhook.pollIntervalMs,
          log: log.child({ component: 'webhook-worker' }),
          onTry: (outcome) => metrics.webhookTry(outcome),
        })
      : null
  return {
    events: createEvents({
      endpoints: config.webhook.endpoints,
      retryForMs: config.webhook.retryForMs,
    }),
    worker,
    webhookEvents: createWebhookEvents({
      db: db.kysely,
      clock,
      retryForMs: config.webhook.retryForMs,
      onDue: () => worker?.kick(),
    }),
  }
}
