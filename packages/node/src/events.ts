// The lifecycle events as campusgate sends them (campusgate's docs/webhooks.md); the `webhooks` section
// of campusgate's OpenAPI document is the source, and test/wire-contract.test.ts holds the two
// together.
import type { MessengerPlatform, Session } from './session.js'

export const EVENT_TYPES = [
  'user.created',
  'session.started',
  'session.ended',
  'university.linked',
  'university.unlinked',
  'user.erased',
  'user.suspended',
  'user.restored',
] as const

export type EventType = (typeof EVENT_TYPES)[number]

/** Why a session ended (`session.ended`'s `data.reason`). */
export const SESSION_ENDED_REASONS = [
  'logout',
  'expiry',
  'rotation',
  'revoked',
  'erasure',
  'suspended',
] as const
export type SessionEndedReason = (typeof SESSION_ENDED_REASONS)[number]

/** Why a user lost tier 2 (`university.unlinked`'s `data.reason`). */
export const UNIVERSITY_UNLINKED_REASONS = [
  'logout',
  'expiry',
  'lapsed',
  'erasure',
  'revoked',
  'suspended',
] as const
export type UniversityUnlinkedReason = (typeof UNIVERSITY_UNLINKED_REASONS)[number]

/** Whose event it is: every type carries both ids. */
export interface EventIds {
  /** campusgate's id of the user. */
  userId: string
  /** The user's messenger openId (what `GET /session` calls `openId`). */
  openId: string
}

/** What each type's `data` carries. */
export interface EventData {
  'user.created': EventIds
  'session.started': EventIds & {
    sessionId: string
    expiresAt: string
    /** The app the session registered from; absent when unknown. */
    appId?: string
    platform: MessengerPlatform
  }
  'session.ended': EventIds & { sessionId: string; reason: SessionEndedReason }
  'university.linked': EventIds & { university: NonNullable<Session['university']> }
  'university.unlinked': EventIds & { reason: UniversityUnlinkedReason }
  'user.erased': EventIds
  /** An operator suspended the person: their sessions ended, their registrations are refused. */
  'user.suspended': EventIds & { reason: string | null }
  /** An operator lifted the suspension. */
  'user.restored': EventIds
}

/**
 * One lifecycle event as the handler hands it over: campusgate's body, and `id`, the delivery's
 * `webhook-id` (the same on every try of the event). `data` is typed for the types campusgate has.
 */
export interface WebhookEvent<T extends string = string> {
  /** The `webhook-id` header: deduplicate on it. */
  id: string
  type: T
  timestamp: string
  data: T extends EventType ? EventData[T] : EventIds & { [field: string]: unknown }
}
