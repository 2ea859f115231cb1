import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance, onRequestAsyncHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'
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
}

export interface RateLimitOptions {
  limits: RateLimitConfig
  /** Shared counters across instances; in-memory counters when null. */
  redis: Redis | null
}

/** Per-address rate limits: one for every request, a stricter one for sensitive routes. */
export const rateLimits = fp(
  async function rateLimitsPlugin(app: FastifyInstance, { limits, redis }: RateLimitOptions) {
    await app.register(rateLimit, {
      global: false,
      max: limits.globalMax,
      timeWindow: limits.windowMs,
      ...(redis === null ? {} : { redis, nameSpace: 'campusgate:rate-limit:' }),
      // With Redis briefly unreachable, serve unlimited rather than fail every request.
      skipOnError: true,
      errorResponseBuilder: (_request, context) =>
        new AppError('rateLimitExceeded', {
          retryAfterSeconds: Math.max(1, Math.ceil(context.ttl / 1000)),
        }),
    })
    app.addHook('onRequest', app.rateLimit())

    const sensitive = app.createRateLimit({
      max: limits.sensitiveMax,
      timeWindow: limits.windowMs,
      // Its own keys, so the two limits never share a counter, in memory or in Redis.
      keyGenerator: (request) => `sensitive:${request.ip}`,
    })
    app.decorate('limitSensitive', async function limitSensitive(request) {
      const result = await sensitive(request)
      if (!result.isAllowed && result.isExceeded) {
        throw new AppError('rateLimitExceeded', {
          retryAfterSeconds: Math.max(1, result.ttlInSeconds),
        })
      }
    } satisfies onRequestAsyncHookHandler)
  },
  { name: 'rate-limits' },
)
