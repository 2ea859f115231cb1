export { createClient, DEFAULT_TIMEOUT_MS, type Client, type ClientOptions } from './client.js'
export {
  CampusgateConfigurationError,
  RateLimitedError,
  SessionServiceUnavailableError,
  type CheckFailure,
} from './errors.js'
export type { GuardOptions } from './guard.js'
export type { CacheOptions } from './cache.js'
export { MEDIA_TYPE, UNAVAILABLE_RETRY_AFTER_SECONDS } from './answers.js'
export { TIERS, type Session, type Tier } from './session.js'
export {
  createWebhookReceiver,
  MAX_EVENT_BYTES,
  type EventType,
  type WebhookAnswer,
  type WebhookEvent,
  type WebhookHandlers,
  type WebhookOptions,
} from './webhooks.js'
