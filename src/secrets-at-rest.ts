import type { Config } from './config.js'
import { createCipher, loadOrCreateKeyFile, type Cipher } from './lib/encryption.js'

/**
 * The cipher for secrets at rest: from DATA_ENCRYPTION_KEY, or (outside production, where the key
 * is required) from a key file created once beside the database. `createdKeyFile` names the file
 * when this start created it, for start-up to say so.
 */
export function cipherFor(config: Config): { cipher: Cipher; createdKeyFile: string | null } {
  if (config.secrets.dataEncryptionKeys !== null) {
    return { cipher: createCipher(config.secrets.dataEncryptionKeys), createdKeyFile: null }
  }
  const { key, created } = loadOrCreateKeyFile(config.secrets.dataEncryptionKeyFile)
  return {
    cipher: createCipher([key]),
    createdKeyFile: created ? config.secrets.dataEncryptionKeyFile : null,
  }
}
