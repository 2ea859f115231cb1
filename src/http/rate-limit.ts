import { isIP } from 'node:net'
import type { FastifyRateLimitStore } from '@fastify/rate-limit'
import LocalStore from '@fastify/rate-limit/store/LocalStore.js'
import RedisStore from '@fastify/rate-limit/store/RedisStore.js'
import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { Redis } from 'ioredis'
import type { RateLimitConfig } from '../config.js'
import { AppError } from '../errors.js'

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * The stricter per-address limit of registration and callback routes. List it first in a
     * route's `onRequest`, before the tier guard, so floods are refused before any lookup.
     */
    limitSensitive: onRequestHookHandler
    /**
     * Counts a request that carried a session key, once the tier guard has checked it: against
     * the session when the key is valid, against the client address when it is not. `done`
     * gets the refusal, if any; under its limits it is called at once with the in-memory store.
     */
    countChecked(
      request: FastifyRequest,
      sessionId: string | null,
      done: (error?: AppError) => void,
    ): void
    /**
     * Counts a `POST /introspect` whose backend credential checked out against that backend's own
     * limit (RATE_LIMIT_PER_BACKEND), never the address's or the key's. `done` gets the refusal.
     */
    countBackend(request: FastifyRequest, backendId: string, done: (error?: AppError) => void): void
  }
  interface FastifyInstance {
    /**
     * The console's own count of failed sign-ins per address (RATE_LIMIT_CONSOLE_SIGN_IN_PER_ADDRESS),
     * apart from the registration limit: a locked-out console never blocks students.
     */
    consoleSignIns: FailureLimit
  }
  interface FastifyRequest {
    /** Over a limit on a route that answers anyway (the callback): act on nothing. */
    overRateLimit: boolean
    /** This request has been counted against a limit: each is counted once. */
    rateLimitCounted: boolean
  }
  interface FastifyContextConfig {
    /** The route answers as usual when over a limit, with `overRateLimit` set (the callback). */
    answersWhenRateLimited?: boolean
    /** Probes and scrapes (/healthz, /readyz, /metrics) are not counted per address. */
    exemptFromAddressLimit?: boolean
  }
}

export interface RateLimitOptions {
  limits: RateLimitConfig
  /** Introspection requests per window per backend (RATE_LIMIT_PER_BACKEND); 0: off. */
  perBackendMax?: number
  /** Counters shared by all instances in this Redis; in-memory counters when null. */
  redisUrl: string | null
  /** Told of every request a limit refuses, for the metrics. */
  onRefused?: (limit: 'address' | 'registration' | 'session' | 'backend') => void
}

/**
 * The rate-limit store. Commands fail fast while Redis is unreachable (no offline queue),
 * so the limiter lets requests through instead of holding them.
 */
function connectRedis(url: string, app: FastifyInstance): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
  })
  let reported = false
  redis.on('error', (error: Error) => {
    if (!reported) app.log.warn({ err: error }, 'redis unavailable; rate limits are not enforced')
    reported = true
  })
  redis.on('ready', () => (reported = false))
  // Start counting from the first request when Redis is there; start anyway when it is not.
  app.addHook('onReady', async () => {
    if (redis.status === 'ready') return
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer)
        redis.off('ready', done)
        resolve()
      }
      const timer = setTimeout(done, 2000)
      redis.once('ready', done)
    })
  })
  app.addHook('onClose', async () => redis.disconnect())
  return redis
}

/**
 * The plugin's Redis store with counters named `campusgate:rate-limit:<limit>:<client>`: shared by
 * every instance on that Redis.
 */
function redisStore(redis: Redis): FastifyRateLimitStore {
  return new RedisStore(false, false, redis, 'campusgate:rate-limit:')
}

/**
 * The counter key of a client address: IPv6 addresses count per /64, the smallest block a
 * network usually hands one subscriber, so one client cannot take a fresh address per request.
 */
export function addressKey(ip: string): string {
  if (isIP(ip) !== 6) return ip
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)
  if (mapped) return mapped[1]
  const [head = '', tail] = ip.split('%')[0].split('::')
  const groups = (part: string | undefined): string[] =>
    part === undefined || part === '' ? [] : part.split(':')
  const before = groups(head)
  const after = groups(tail).flatMap((group) => {
    if (!group.includes('.')) return [group]
    const [a, b, c, d] = group.split('.').map(Number) as [number, number, number, number]
    return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)]
  })
  const zeros = Array.from({ length: 8 - before.length - after.length }, () => '0')
  const full = [...before, ...zeros, ...after]
  return `${full
    .slice(0, 4)
    .map((group) => parseInt(group, 16).toString(16))
    .join(':')}::/64`
}

/** A limit on failures only: asked before a try, told after each one that failed. */
export interface FailureLimit {
  /** Seconds until the request's address may try again; null while it is under the limit. */
  refusedFor(request: FastifyRequest): Promise<number | null>
  /** Counts a failed try of the request's address. */
  fail(request: FastifyRequest): Promise<void>
}

/**
 * `max` failures per window per address: in Redis when there is one (every instance counts
 * together), else in memory. The plugin's stores only count every request, so this one is ours;
 * like them it lets requests through while Redis is unreachable.
 */
function failureLimit(
  max: number,
  windowMs: number,
  redis: Redis | null,
  prefix: string,
): FailureLimit {
  if (max === 0) return { refusedFor: async () => null, fail: async () => undefined }
  const keyOf = (request: FastifyRequest) => `${prefix}${addressKey(request.ip)}`
  if (redis !== null) {
    return {
      async refusedFor(request) {
        const key = keyOf(request)
        const [count, ttl] = await Promise.all([redis.get(key), redis.pttl(key)]).catch(
          () => [null, -1] as const,
        )
        return Number(count ?? 0) >= max ? Math.max(1, Math.ceil(Math.max(ttl, 0) / 1000)) : null
      },
      async fail(request) {
        const key = keyOf(request)
        const count = await redis.incr(key).catch(() => null)
        if (count === 1) await redis.pexpire(key, windowMs).catch(() => undefined)
      },
    }
  }
  // Room for many addresses; the least recently failing are forgotten first.
  const counts = new Map<string, { count: number; resetAt: number }>()
  const current = (key: string) => {
    const entry = counts.get(key)
    return entry === undefined || entry.resetAt <= Date.now() ? null : entry
  }
  return {
    async refusedFor(request) {
      const entry = current(keyOf(request))
      return entry === null || entry.count < max
        ? null
        : Math.max(1, Math.ceil((entry.resetAt - Date.now()) / 1000))
    },
    async fail(request) {
      const key = keyOf(request)
      const entry = current(key) ?? { count: 0, resetAt: Date.now() + windowMs }
      counts.delete(key)
      counts.set(key, { ...entry, count: entry.count + 1 })
      if (counts.size > 50_000) counts.delete(counts.keys().next().value!)
    },
  }
}

/** 429 with `Retry-After`: the seconds until the window resets, at least one. */
function rateLimited(secondsLeft: number): AppError {
  return new AppError('rateLimitExceeded', { retryAfterSeconds: Math.max(1, secondsLeft) })
}

/**
 * Counts one request against `key` and calls `done` with the refusal, if any. The in-memory store
 * answers at once, so a request under its limits passes without a promise; Redis answers later.
 */
type Limiter = (request: FastifyRequest, key: string, done: (error?: AppError) => void) => void

/**
 * docs/decisions.md, "Rate limits": per client address, per valid session, and a stricter per-address limit on
 * registration and callback routes; a limit of 0 is off.
 *
 * Where they run: a request without a session key is counted against its address before anything
 * else. One with a key is counted once the tier guard has checked it — against the session when
 * valid, so a backend checking many users' keys from one address meets only each key's limit; and
 * against the address when not, so guessing keys is limited like anything else. A request whose
 * key no guard checks (an unguarded route) is counted against its address after routing.
 * `POST /introspect` counts against the backend its credential names, once that checks out
 * (docs/tier-guard.md, "From another backend"): the users' keys it asks about and the address it
 * comes from are not counted.
 */
export const rateLimits = fp(
  async function rateLimitsPlugin(
    app: FastifyInstance,
    { limits, perBackendMax = 0, redisUrl, onRefused }: RateLimitOptions,
  ) {
    const redis = redisUrl === null ? null : connectRedis(redisUrl, app)

    /**
     * A limiter of `max` per window on counters named `prefix:…`; none when `max` is 0. It counts
     * in the plugin's own stores, called directly: the key check runs one on every request, and
     * the plugin's per-call wrapper (its options merged, its hooks' bookkeeping, four awaits)
     * cost more than the count itself.
     */
    function limiter(
      max: number,
      prefix: 'address' | 'sensitive' | 'session' | 'backend',
    ): Limiter {
      if (max === 0) return (_request, _key, done) => done()
      // Its own counters: in memory, room for many clients before the least recent are forgotten.
      const store = redis === null ? new LocalStore(false, false, 50_000) : redisStore(redis)
      return (request, key, done) =>
        store.incr(
          `${prefix}:${key}`,
          (error, counted) => {
            // With Redis briefly unreachable, serve unlimited rather than fail every request.
            if (error !== null || counted === undefined || counted.current <= max) return done()
            onRefused?.(prefix === 'sensitive' ? 'registration' : prefix)
            if (request.routeOptions.config.answersWhenRateLimited === true) {
              request.overRateLimit = true
              return done()
            }
            done(rateLimited(Math.ceil(counted.ttl / 1000)))
          },
          limits.windowMs,
          max,
        )
    }

    const countAddress = limiter(limits.globalMax, 'address')
    const countSensitive = limiter(limits.sensitiveMax, 'sensitive')
    const countSession = limiter(limits.perSessionMax, 'session')
    const countBackend = limiter(perBackendMax, 'backend')
    /** Counts against the request's address, once; `done` as a hook's. */
    const countOnceByAddress = (
      request: FastifyRequest,
      done: (error?: AppError) => void,
    ): void => {
      request.rateLimitCounted = true
      countAddress(request, addressKey(request.ip), done)
    }

    app.decorateRequest('overRateLimit', false)
    app.decorateRequest('rateLimitCounted', false)

    const exempt = (request: FastifyRequest): boolean =>
      request.routeOptions.config.exemptFromAddressLimit === true
    // Callback-style hooks: most requests pass them without counting anything, and then they
    // cost no promise (these run on every request, the key check included).
    app.addHook('onRequest', (request, _reply, done) => {
      if (request.headers.authorization !== undefined || exempt(request)) return done()
      countOnceByAddress(request, done)
    })
    // Routing and route hooks are done: a key no guard checked counts against the address.
    app.addHook('preParsing', (request, _reply, payload, done) => {
      if (request.rateLimitCounted || exempt(request)) return done(null, payload)
      countOnceByAddress(request, (error) => done(error ?? null, payload))
    })

    // Refused before routing finished (406, 404 with a key): still counted, after the answer.
    app.addHook('onResponse', (request, _reply, done) => {
      if (request.rateLimitCounted || exempt(request)) return done()
      countOnceByAddress(request, () => done())
    })

    app.decorate('countChecked', function countChecked(request, sessionId, done) {
      if (request.rateLimitCounted) return done()
      if (sessionId === null) return countOnceByAddress(request, done)
      request.rateLimitCounted = true
      countSession(request, sessionId, done)
    } satisfies FastifyInstance['countChecked'])

    app.decorate(
      'consoleSignIns',
      failureLimit(
        limits.consoleSignInMax,
        limits.windowMs,
        redis,
        'campusgate:rate-limit:console-sign-in:',
      ),
    )

    app.decorate('countBackend', function countBackendRequest(request, backendId, done) {
      if (request.rateLimitCounted) return done()
      request.rateLimitCounted = true
      countBackend(request, backendId, done)
    } satisfies FastifyInstance['countBackend'])

    app.decorate('limitSensitive', function limitSensitive(request, _reply, done) {
      countSensitive(request, addressKey(request.ip), done)
    } satisfies onRequestHookHandler)
  },
  { name: 'rate-limits' },
)
