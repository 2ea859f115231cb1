/*
 * The lifecycle events campusgate announces to the app's other backends (docs/webhooks.md, "Lifecycle
 * events (webhooks)"). Every body is `{ type, timestamp, data: { userId, openId, ... } }`; nothing
 * in it is a secret: no session key, registration code, cookie, token or messenger session key.
 */

export const EVENT_TYPES = [
  'user.created',
  'session.started',
  'session.ended',
  'university.linked',
  'university.unlinked',
  'user.erased',
] as const

export type EventType = (typeof EVENT_TYPES)[number]

/** Why a session ended (`session.ended`): the one list the types and the OpenAPI enum come from. */
export const SESSION_END_REASONS = ['logout', 'expiry', 'rotation', 'revoked', 'erasure'] as const
export type SessionEndReason = (typeof SESSION_END_REASONS)[number]

/** Why a user lost tier 2 (`university.unlinked`): the one list the types and the OpenAPI enum come from. */
export const UNLINK_REASONS = ['logout', 'expiry', 'lapsed', 'erasure', 'revoked'] as const
export type UnlinkReason = (typeof UNLINK_REASONS)[number]

/** The university identity as `GET /session` shows it: fields the provider did not give are absent. */
export interface UniversityView {
  subject?: string
  email?: string
  name?: string
  isStudent?: boolean
  /** ISO-8601. */
  linkedAt: string
}

/** An event's type and what its `data` carries besides `userId` and `openId`. */
export type LifecycleEvent =
  | { type: 'user.created'; data?: undefined }
  | {
      type: 'session.started'
      /** `appId` and `platform`: the app the session registered from (an imported one's app is unknown). */
      data: { sessionId: string; expiresAt: string; appId?: string; platform: string }
    }
  | { type: 'session.ended'; data: { sessionId: string; reason: SessionEndReason } }
  | { type: 'university.linked'; data: { university: UniversityView } }
  | { type: 'university.unlinked'; data: { reason: UnlinkReason } }
  | { type: 'user.erased'; data?: undefined }

/** Whose event it is: every type carries both ids. */
export interface EventUser {
  userId: string
  openId: string
}

/** The body every try of the event sends, byte for byte. */
export function eventBody(user: EventUser, event: LifecycleEvent, at: number): string {
  return JSON.stringify({
    type: event.type,
    timestamp: new Date(at).toISOString(),
    data: { userId: user.userId, openId: user.openId, ...event.data },
  })
}
