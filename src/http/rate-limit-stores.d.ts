// The stores @fastify/rate-limit ships without declarations of their own.
declare module '@fastify/rate-limit/store/RedisStore.js' {
  import type { FastifyRateLimitStore } from '@fastify/rate-limit'
  import type { Redis } from 'ioredis'

  export default class RedisStore implements FastifyRateLimitStore {
    constructor(continueExceeding: boolean, exponentialBackoff: boolean, redis: Redis, key?: string)
    incr: FastifyRateLimitStore['incr']
    child: FastifyRateLimitStore['child']
  }
}

declare module '@fastify/rate-limit/store/LocalStore.js' {
  import type { FastifyRateLimitStore } from '@fastify/rate-limit'

  /** In memory, the least recently counted of `cache` clients forgotten first (toad-cache). */
  export default class LocalStore implements FastifyRateLimitStore {
    constructor(continueExceeding: boolean, exponentialBackoff: boolean, cache?: number)
    incr: FastifyRateLimitStore['incr']
    child: FastifyRateLimitStore['child']
  }
}
