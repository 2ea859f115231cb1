export { createClient, DEFAULT_TIMEOUT_MS, type Client, type ClientOptions } from './client.js'
export {
  CampusgateConfigurationError,
  RateLimitedError,
  SessionServiceUnavailableError,
  type CheckFailure,
} from './errors.js'
export type { GuardOptions, Refusal } from './guard.js'
export type { CacheOptions } from './cache.js'
export { ERROR_CODES, MEDIA_TYPE, UNAVAILABLE_RETRY_AFTER_SECONDS } from './answers.js'
export { TIERS, type MessengerPlatform, type Session, type Tier } from './session.js'
export {
  createWebhookReceiver,
  MAX_EVENT_BYTES,
  memorySeenStore,
  SEEN_FOR_MS,
  TIMESTAMP_TOLERANCE_SECONDS,
  WebhookRefusedError,
  type SeenStore,
  type WebhookAnswer,
  type WebhookHandlers,
  type WebhookOptions,
  type WebhookRefusalReason,
} from './webhooks.js'
export {
  EVENT_TYPES,
  SESSION_ENDED_REASONS,
  UNIVERSITY_UNLINKED_REASONS,
  type EventData,
  type EventIds,
  type EventType,
  type SessionEndedReason,
  type UniversityUnlinkedReason,
  type WebhookEvent,
} from './events.js'
