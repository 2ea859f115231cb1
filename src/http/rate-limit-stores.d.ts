// The Redis store @fastify/rate-limit ships without declarations of its own.
declare module '@fastify/rate-limit/store/RedisStore.js' {
  import type { FastifyRateLimitStore } from '@fastify/rate-limit'
  import type { Redis } from 'ioredis'

  export default class RedisStore implements FastifyRateLimitStore {
    constructor(continueExceeding: boolean, exponentialBackoff: boolean, redis: Redis, key?: string)
    incr: FastifyRateLimitStore['incr']
    child: FastifyRateLimitStore['child']
  }
}
