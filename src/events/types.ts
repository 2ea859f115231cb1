/*
 * The lifecycle events campusgate announces to the app's other backends (docs/webhooks.md, "Lifecycle
 * events (webhooks)"). Every body is `{ type, timestamp, data: { userId, openId, ... } }`; nothing
 * in it is a secret: no session key, registration code, cookie, token or messenger session key.
 */

/** Why a session ended (`session.ended`): the one list the types and the OpenAPI enum come from. */
export const SESSION_END_REASONS = [
  'logout',
  'expiry',
  'rotation',
  'revoked',
  'erasure',
  'suspended',
] as const
export type SessionEndReason = (typeof SESSION_END_REASONS)[number]

/** Why a user lost tier 2 (`university.unlinked`): the one list the types and the OpenAPI enum come from. */
export const UNLINK_REASONS = [
  'logout',
  'expiry',
  'lapsed',
  'erasure',
  'revoked',
  'suspended',
] as const
export type UnlinkReason = (typeof UNLINK_REASONS)[number]

/** The longest reason an operator may give for a suspension (`user.suspended`'s `reason`). */
export const SUSPENSION_REASON_MAX = 500

/** The university identity as `GET /session` shows it: fields the provider did not give are absent. */
export interface UniversityView {
  subject?: string
  email?: string
  name?: string
  isStudent?: boolean
  /** ISO-8601. */
  linkedAt: string
}

/** A type's entry in {@link EVENTS}: what its `data` carries besides `userId` and `openId`, as a type. */
interface Carries<Data extends object | undefined> {
  readonly data?: Data
}

/** The entry of a type whose `data` carries only the two ids. */
const idsOnly: Carries<undefined> = {}
/** The entry of a type whose `data` also carries `Data`. */
const carries = <Data extends object>(): Carries<Data> => ({})

/**
 * Every event type, each once, with the shape of its `data`: the one source of the list
 * (`EVENT_TYPES`) and of the union (`LifecycleEvent`), so a type cannot be in one and not the other.
 */
const EVENTS = {
  'user.created': idsOnly,
  /** `appId` and `platform`: the app the session registered from (an imported one's app is unknown). */
  'session.started': carries<{
    sessionId: string
    expiresAt: string
    appId?: string
    platform: string
  }>(),
  'session.ended': carries<{ sessionId: string; reason: SessionEndReason }>(),
  'university.linked': carries<{ university: UniversityView }>(),
  'university.unlinked': carries<{ reason: UnlinkReason }>(),
  'user.erased': idsOnly,
  /** An operator suspended the person (docs/webhooks.md, "The events"): `reason` is theirs, or null. */
  'user.suspended': carries<{ reason: string | null }>(),
  'user.restored': idsOnly,
} as const satisfies Record<string, Carries<object | undefined>>

export type EventType = keyof typeof EVENTS

/** Every event type, in the order above. */
export const EVENT_TYPES = Object.keys(EVENTS) as readonly EventType[]

type DataOf<Type extends EventType> = NonNullable<(typeof EVENTS)[Type]['data']>

/** An event's type and what its `data` carries besides `userId` and `openId`. */
export type LifecycleEvent = {
  [Type in EventType]: (typeof EVENTS)[Type] extends Carries<undefined>
    ? { type: Type; data?: undefined }
    : { type: Type; data: DataOf<Type> }
}[EventType]

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
