import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto'

/** 256 bits from the CSPRNG, base64url: session keys, registration codes, attempt cookies. */
export function generateSecret(): string {
  return randomBytes(32).toString('base64url')
}

/** SHA-256, hex. Only this is stored: a database dump yields no usable secret. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex')
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

/**
 * Replaces each secret, as written or URL-encoded, with `[redacted]`: for text that goes to the
 * logs but may echo what we sent (an error naming our request URL, a provider's error message).
 */
export function redact(text: string, secrets: readonly string[]): string {
  let clean = text
  for (const secret of secrets) {
    if (secret === '') continue
    for (const form of new Set([secret, encodeURIComponent(secret)]))
      clean = clean.split(form).join('[redacted]')
  }
  return clean
}
