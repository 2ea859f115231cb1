export type Tier = 'messenger-registered' | 'university-registered'

export const TIERS: readonly Tier[] = ['messenger-registered', 'university-registered']

/** The messenger platforms an app may run on. */
export type MessengerPlatform = 'wechat' | 'qq' | 'douyin'

/** What `GET /session` answers for a valid key; with `credentials`, also `userId`. */
export interface Session {
  /** This session's id: one of the user's sessions, one per device (`GET /sessions`' `id`). */
  sessionId: string
  /**
   * campusgate's id of the person (introspection's `sub`): the same in every app and on every
   * platform, and never given to anyone else, unlike an openId a person may register with again
   * after an erasure. Key the app's data on it. Present when keys are checked by introspection
   * (the client's `credentials`); `GET /session` does not name it.
   */
  userId?: string
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

/** Whether a session's tier is at least `tier`. */
export function reaches(session: Session, tier: Tier): boolean {
  return TIERS.indexOf(session.tier) >= TIERS.indexOf(tier)
}

export function assertTier(tier: unknown): asserts tier is Tier {
  // Fail closed: a tier the guard does not know is a programming error, found at start-up.
  if (!TIERS.includes(tier as Tier)) {
    throw new TypeError(`requireTier: unknown tier ${JSON.stringify(tier)}`)
  }
}

/** The session key from `Authorization` as campusgate reads it: the raw key, or `Bearer <key>`. */
export function sessionKeyFrom(header: string | string[] | undefined): string | null {
  if (typeof header !== 'string') return null
  const value = header.trim()
  const key = /^bearer\s+/i.test(value) ? value.replace(/^bearer\s+/i, '') : value
  return key === '' ? null : key
}

/** Whether a parsed `GET /session` answer has the session's shape (a wrong `baseUrl` gives other JSON). */
export function isSession(value: unknown): value is Session {
  if (typeof value !== 'object' || value === null) return false
  const { sessionId, openId, tier, expiresAt, university } = value as Record<string, unknown>
  return (
    typeof sessionId === 'string' &&
    typeof openId === 'string' &&
    TIERS.includes(tier as Tier) &&
    typeof expiresAt === 'string' &&
    (university === undefined || (typeof university === 'object' && university !== null))
  )
}

/**
 * The session in a `POST /introspect` answer (RFC 7662), in `GET /session`'s shape: null for an
 * inactive key, undefined for an answer that is not campusgate's.
 */
export function sessionFromIntrospection(value: unknown): Session | null | undefined {
  if (typeof value !== 'object' || value === null) return undefined
  const { active, sub, sid, openId, appId, platform, tier, exp, university } = value as Record<
    string,
    unknown
  >
  if (active === false) return null
  if (
    active !== true ||
    typeof sid !== 'string' ||
    typeof sub !== 'string' ||
    typeof openId !== 'string' ||
    (appId !== undefined && typeof appId !== 'string') ||
    typeof platform !== 'string' ||
    !TIERS.includes(tier as Tier) ||
    typeof exp !== 'number' ||
    !Number.isFinite(exp) ||
    (university !== undefined && (typeof university !== 'object' || university === null))
  ) {
    return undefined
  }
  return {
    sessionId: sid,
    userId: sub,
    openId,
    ...(appId === undefined ? {} : { appId }),
    platform: platform as MessengerPlatform,
    tier: tier as Tier,
    expiresAt: new Date(exp * 1000).toISOString(),
    ...(university === undefined ? {} : { university: university as Session['university'] }),
  }
}
