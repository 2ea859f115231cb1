// The kit's copies of campusgate's interface (v1). test/wire-contract.test.ts checks each against
// campusgate's own OpenAPI document, so a change on either side fails until the other follows.

/** The media type of campusgate's interface, version 1. */
export const MEDIA_TYPE = 'application/vnd.service.v1+json'

/** The tiers, lowest first: a session at a tier has every tier before it too. */
export const TIERS = ['messenger-registered', 'university-registered'] as const

export type Tier = (typeof TIERS)[number]

/** The messenger platforms an app may run on. */
export type MessengerPlatform = 'wechat' | 'qq' | 'douyin'

/** What `GET /session` answers. */
export interface Session {
  /** This session's id: one of the user's sessions, one per device (`GET /sessions`' `id`). */
  sessionId: string
  openId: string
  /** The app the session registered from; absent when unknown (a session imported from elsewhere). */
  appId?: string
  /** That app's messenger platform. */
  platform: MessengerPlatform
  tier: Tier
  expiresAt: string
  /** At `university-registered` only; fields the university did not give are absent. */
  university?: {
    subject?: string
    email?: string
    name?: string
    isStudent?: boolean
    linkedAt: string
  }
}

/**
 * What the kit sends as `appSecret`: the key stays required on the wire, but campusgate holds the
 * secret itself (MESSENGER_APP_SECRETS) and does not use what a client sends there.
 */
export const SERVER_HELD = 'server-held'

/** One of the user's live sessions (one per device or install), as `GET /sessions` lists it. */
export interface DeviceSession {
  id: string
  createdAt: string
  lastUsedAt: string
  expiresAt: string
  /** The `User-Agent` of the registering request (at most 256 characters); null without one. */
  device: string | null
  /** The session of the key this kit holds. */
  current: boolean
}

/** What `GET /sessions` answers. */
export interface SessionsAnswer {
  sessions: DeviceSession[]
}

/** What the kit sends to `POST /register/messenger`. */
export interface RegisterMessengerBody {
  appId: string
  /** Always SERVER_HELD. */
  appSecret: string
  code: string
  /** The device's name (at most 64 characters): its session's label instead of the User-Agent. */
  device?: string
}

/** What `POST /register/messenger` answers. */
export interface RegisterMessengerAnswer {
  sessionKey: string
  expiresAt: string
}

/** What the kit sends to `POST /register/university`. */
export interface RegisterUniversityBody {
  email: string
}

/** The codes the kit acts on, and the status each comes with. */
export const WIRE_ERRORS = {
  /** The key is unknown, ended or expired: the kit signs in again once. */
  invalidSessionKey: { status: 401, code: '@unauthorized/invalid-session-key' },
  /**
   * POST /register/messenger: an operator suspended the person. The login (and the call that
   * needed it) rejects with it at once; nothing is tried again until the app asks again.
   */
  userSuspended: { status: 403, code: '@forbidden/user-suspended' },
  /** Rate limited: the kit waits a short `Retry-After` once. */
  rateLimitExceeded: { status: 429, code: '@too-many-requests/rate-limit-exceeded' },
} as const
