import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { AppError } from '../errors.js'
import { MAX_SECRET_LENGTH } from '../lib/secrets.js'
import type { Session, Sessions } from '../sessions/service.js'
import type { Tier } from '../sessions/tier.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller's session, set by `requireTier`; `null` on routes without a guard. */
    session: Session | null
  }
  interface FastifyInstance {
    /**
     * A route-level `onRequest` hook that admits only sessions of at least `tier`:
     * `app.get('/forum', { onRequest: app.requireTier('university-registered') }, handler)`.
     */
    requireTier(tier: Tier): onRequestHookHandler
  }
}

const RANK: Readonly<Record<Tier, number>> = {
  'messenger-registered': 1,
  'university-registered': 2,
}

/** The session key from `Authorization`: the raw key, or `Bearer <key>` (docs/decisions.md, "Wire interface"). */
export function sessionKeyFrom(header: string | undefined): string | null {
  if (header === undefined) return null
  const value = header.trim()
  const key = /^bearer\s+/i.test(value) ? value.replace(/^bearer\s+/i, '') : value
  return key === '' ? null : key
}

async function authenticate(sessions: Sessions, request: FastifyRequest): Promise<Session> {
  const key = sessionKeyFrom(request.headers.authorization)
  if (key === null) throw new AppError('missingAuthorizationHeader')
  const session = key.length > MAX_SECRET_LENGTH ? null : await sessions.validate(key)
  if (session === null) throw new AppError('invalidSessionKey')
  return session
}

/**
 * The tier guard. Registered once with the sessions service; every route group, campusgate's and
 * the app's own, then uses `app.requireTier(tier)`.
 */
export const tierGuard = fp(
  function tierGuardPlugin(app: FastifyInstance, options: { sessions: Sessions }) {
    app.decorateRequest('session', null)
    app.decorate('requireTier', (tier: Tier): onRequestHookHandler => {
      // Fail closed: a tier this guard does not know is a programming error, found at start-up.
      if (typeof tier !== 'string' || !Object.hasOwn(RANK, tier)) {
        throw new Error(`requireTier: unknown tier ${JSON.stringify(tier)}`)
      }
      // Callback-style: under its limits with in-memory counters, the count after the key check
      // settles at once, and the hook costs the key check's promise only.
      return function requireTier(request, _reply, done) {
        authenticate(options.sessions, request).then(
          (session) =>
            // A valid key counts against its session, not the address it comes from.
            app.countChecked(request, session.id, (refusal) => {
              if (refusal !== undefined) return done(refusal)
              if (RANK[session.tier] < RANK[tier]) {
                return done(new AppError('insufficientRegistrationTier'))
              }
              request.session = session
              done()
            }),
          // A key that is missing or not valid counts against the client's address.
          (error: Error) => app.countChecked(request, null, (refusal) => done(refusal ?? error)),
        )
      }
    })
  },
  { name: 'tier-guard', dependencies: ['rate-limits'] },
)
