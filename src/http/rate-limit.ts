import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance, onRequestAsyncHookHandler } from 'fastify'
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
    limitSensitive: onRequestAsyncHookHandler
  }
  interface FastifyContextConfig {
    /** Probes and scrapes (/healthz, /readyz, /metrics) are not counted per address. */
    exemptFromAddressLimit?: boolean
  }
}

export interface RateLimitOptions {
  limits: RateLimitConfig
  /** Counters shared by all instances in this Redis; in-memory counters when null. */
  redisUrl: string | null
  /** Told of every request a limit refuses, for the metrics. */
  onRefused?: (limit: 'address' | 'registration') => void
}

/**
 * The shared rate-limit store. Commands fail fast while Redis is unreachable (no offline queue),
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

/** 429 with `Retry-After`: the seconds until the window resets, at least one. */
function rateLimited(secondsLeft: number): AppError {
  return new AppError('rateLimitExceeded', { retryAfterSeconds: Math.max(1, secondsLeft) })
}

/** Per-address rate limits: one for every request, a stricter one for sensitive routes. */
export const rateLimits = fp(
  async function rateLimitsPlugin(
    app: FastifyInstance,
    { limits, redisUrl, onRefused }: RateLimitOptions,
  ) {
    const redis = redisUrl === null ? null : connectRedis(redisUrl, app)
    await app.register(rateLimit, {
      global: false,
      max: limits.globalMax,
      timeWindow: limits.windowMs,
      ...(redis === null ? {} : { redis, nameSpace: 'campusgate:rate-limit:' }),
      // With Redis briefly unreachable, serve unlimited rather than fail every request.
      skipOnError: true,
      errorResponseBuilder: (_request, context) => {
        onRefused?.('address')
        return rateLimited(Math.ceil(context.ttl / 1000))
      },
    })
    const limitAddress = app.rateLimit()
    app.addHook('onRequest', function limitPerAddress(request, reply) {
      if (request.routeOptions.config.exemptFromAddressLimit === true) return Promise.resolve()
      return limitAddress.call(this, request, reply)
    } satisfies onRequestAsyncHookHandler)

    const sensitive = app.createRateLimit({
      max: limits.sensitiveMax,
      timeWindow: limits.windowMs,
      // Its own keys, so the two limits never share a counter, in memory or in Redis.
      keyGenerator: (request) => `sensitive:${request.ip}`,
    })
    app.decorate('limitSensitive', async function limitSensitive(request) {
      const result = await sensitive(request)
      if (!result.isAllowed && result.isExceeded) {
        onRefused?.('registration')
        throw rateLimited(result.ttlInSeconds)
      }
    } satisfies onRequestAsyncHookHandler)
  },
  { name: 'rate-limits' },
)
