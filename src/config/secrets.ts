import { dirname, join } from 'node:path'
import type { SecretsConfig } from './types.js'
import { type Env, fail, type Problems } from './problems.js'
import { list } from './readers.js'

/** DATA_ENCRYPTION_KEY, or the development key file beside the database when it is unset. */
export function readSecrets(env: Env, { guard }: Problems, databaseUrl: string): SecretsConfig {
  const keys = guard(null, () => encryptionKeys(env))
  return Object.freeze({
    dataEncryptionKeys: keys === null ? null : Object.freeze(keys),
    dataEncryptionKeyFile: keyFileFor(databaseUrl),
  })
}

/** `DATA_ENCRYPTION_KEY`: base64 of exactly 32 bytes each, comma-separated for rotation. */
function encryptionKeys(env: Env): Buffer[] | null {
  const items = list(env, 'DATA_ENCRYPTION_KEY')
  if (items === null) return null
  if (items.length === 0) fail('DATA_ENCRYPTION_KEY', 'names no key')
  // Messages never repeat a key.
  return items.map((item, index) => {
    const key = /^([A-Za-z0-9+/]{43}=|[A-Za-z0-9_-]{43})$/.test(item)
      ? Buffer.from(item, item.endsWith('=') ? 'base64' : 'base64url')
      : null
    if (key === null || key.length !== 32) {
      fail(
        'DATA_ENCRYPTION_KEY',
        `key ${index + 1} is not base64 of 32 bytes (make one with: openssl rand -base64 32)`,
      )
    }
    return key
  })
}

/** Beside the SQLite file; for PostgreSQL in ./data, shared by the instances of one checkout. */
function keyFileFor(databaseUrl: string): string {
  const path = databaseUrl.startsWith('sqlite:') ? databaseUrl.slice('sqlite:'.length) : ''
  if (path === '' || path === ':memory:') return './data/campusgate.key'
  return join(dirname(path.replace(/^\/\/(?=\/)/, '')), 'campusgate.key')
}
