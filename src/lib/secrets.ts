import { createHash, hash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto'

/**
 * Longest secret (session key, registration code, attempt cookie, client credential) that is
 * hashed or compared at all. Ours are 43 characters; anything much longer is not one of them.
 */
export const MAX_SECRET_LENGTH = 256

/** 256 bits from the CSPRNG, base64url: session keys, registration codes, attempt cookies. */
export function generateSecret(): string {
  return randomBytes(32).toString('base64url')
}

/**
 * SHA-256, hex. Only this is stored: a database dump yields no usable secret. One-shot
 * `crypto.hash` (the key check runs it on every request): half the cost of a Hash object.
 */
export function hashSecret(secret: string): string {
  return hash('sha256', secret, 'hex')
}

/**
 * Compares two secrets in constant time. Both are hashed first so the comparison runs over
 * equal-length digests and leaks neither content nor length.
 */
export function secretsEqual(a: string, b: string): boolean {
  const da = createHash('sha256').update(a, 'utf8').digest()
  const db = createHash('sha256').update(b, 'utf8').digest()
  return timingSafeEqual(da, db)
}

/** Row identifiers: random, so they reveal neither counts nor order. */
export function newId(): string {
  return randomUUID()
}
