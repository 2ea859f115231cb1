import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'

/**
 * AES-256-GCM for the secrets campusgate must be able to read back (the messenger session key,
 * provider tokens, queued mail bodies). Several keys rotate: the first encrypts, all decrypt; each
 * ciphertext names its key by a short fingerprint, so no key is tried in vain.
 */
export interface Cipher {
  encrypt(plaintext: string): string
  /** The plaintext, or throws when no configured key made it or it was altered. */
  decrypt(ciphertext: string): string
}

const VERSION = 'v1'
const IV_BYTES = 12
export const KEY_BYTES = 32

/** The key's name inside a ciphertext: 8 hex digits of its SHA-256, which reveal nothing of it. */
function fingerprint(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 8)
}

export function createCipher(keys: readonly Buffer[]): Cipher {
  if (keys.length === 0 || keys.some((key) => key.length !== KEY_BYTES)) {
    throw new Error(`encryption keys must be ${KEY_BYTES} bytes each`)
  }
  const byId = new Map(keys.map((key) => [fingerprint(key), key]))
  const current = keys[0]
  const currentId = fingerprint(current)
  return {
    encrypt(plaintext) {
      const iv = randomBytes(IV_BYTES)
      const cipher = createCipheriv('aes-256-gcm', current, iv)
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
      const parts = [iv, cipher.getAuthTag(), body].map((part) => part.toString('base64url'))
      return [VERSION, currentId, ...parts].join('.')
    },
    decrypt(ciphertext) {
      const [version, keyId, iv, tag, body, ...rest] = ciphertext.split('.')
      const key = byId.get(keyId ?? '')
      if (version !== VERSION || key === undefined || body === undefined || rest.length > 0) {
        throw new Error('ciphertext of an unknown format or key')
      }
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'))
      decipher.setAuthTag(Buffer.from(tag, 'base64url'))
      return Buffer.concat([
        decipher.update(Buffer.from(body, 'base64url')),
        decipher.final(),
      ]).toString('utf8')
    },
  }
}

/**
 * Reads the key kept in `path`, or creates it (32 random bytes, base64, mode 0600) when there is
 * none; `created` says which. The key is written whole under a name of its own and then linked
 * into place, which fails when a key is already there: instances starting together share one
 * key, and none reads a file another is still writing.
 */
export function loadOrCreateKeyFile(path: string): { key: Buffer; created: boolean } {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
  let created = false
  const written = `${path}.${randomBytes(8).toString('hex')}.new`
  writeFileSync(written, `${randomBytes(KEY_BYTES).toString('base64')}\n`, {
    mode: 0o600,
    flag: 'wx',
  })
  try {
    linkSync(written, path)
    created = true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
  } finally {
    unlinkSync(written)
  }
  const key = Buffer.from(readFileSync(path, 'utf8').trim(), 'base64')
  if (key.length !== KEY_BYTES) throw new Error(`${path} does not hold a ${KEY_BYTES}-byte key`)
  return { key, created }
}
