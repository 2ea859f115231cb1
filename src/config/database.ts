import type { DatabaseConfig } from './types.js'
import { type Env, fail, type Problems, read } from './problems.js'
import { withDefaults } from './readers.js'

const DEFAULT_DATABASE_URL = 'sqlite:./data/campusgate.db'

/**
 * DATABASE_URL, DATABASE_POOL_SIZE, REDIS_URL. The URL is parsed here once: the development key
 * file beside it (secrets.ts) and the backups (backups.ts) follow the value read here.
 */
export function readDatabase(env: Env, { guard }: Problems): DatabaseConfig {
  return Object.freeze({
    url: guard(DEFAULT_DATABASE_URL, () => databaseUrl(env)),
    poolSize: withDefaults(env, { guard }).integer('DATABASE_POOL_SIZE', 10, 1, 1000),
    redisUrl: guard(null, () => redisUrl(env)),
  })
}

function databaseUrl(env: Env): string {
  const raw = read(env, 'DATABASE_URL') ?? DEFAULT_DATABASE_URL
  if (/^sqlite:.+/.test(raw) || /^postgres(ql)?:\/\/.+/.test(raw)) return raw
  return fail('DATABASE_URL', 'must be sqlite:PATH or postgres://…')
}

function redisUrl(env: Env): string | null {
  const raw = read(env, 'REDIS_URL')
  if (raw === undefined) return null
  return /^rediss?:\/\/.+/.test(raw)
    ? raw
    : fail('REDIS_URL', 'must be redis://host:port or rediss://…')
}
