import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import { loadConfig } from '../../src/config.js'
import { createCipher } from '../../src/lib/encryption.js'

describe('secrets at rest: AES-256-GCM with rotating keys', () => {
  const oldKey = randomBytes(32)
  const newKey = randomBytes(32)

  it('round-trips, with a fresh IV each time', () => {
    const cipher = createCipher([newKey])
    const a = cipher.encrypt('wechat-session-key')
    assert.notEqual(a, cipher.encrypt('wechat-session-key'))
    assert.ok(!a.includes('wechat-session-key'))
    assert.equal(cipher.decrypt(a), 'wechat-session-key')
  })

  it('decrypts with every listed key and encrypts with the first (rotation)', () => {
    const sealedBefore = createCipher([oldKey]).encrypt('token')
    const rotated = createCipher([newKey, oldKey])
    assert.equal(rotated.decrypt(sealedBefore), 'token')
    assert.equal(createCipher([newKey]).decrypt(rotated.encrypt('token')), 'token')
    assert.throws(() => createCipher([newKey]).decrypt(sealedBefore))
  })

  it('refuses an altered ciphertext', () => {
    const cipher = createCipher([newKey])
    const parts = cipher.encrypt('token').split('.')
    parts[4] = Buffer.from('tokem').toString('base64url')
    assert.throws(() => cipher.decrypt(parts.join('.')))
  })

  it('reads DATA_ENCRYPTION_KEY as a comma list of base64 32-byte keys, and names it when wrong', () => {
    const config = loadConfig({
      DATA_ENCRYPTION_KEY: `${newKey.toString('base64')}, ${oldKey.toString('base64')}`,
    })
    assert.deepEqual(config.dataEncryptionKeys, [newKey, oldKey])
    for (const bad of [
      'short',
      randomBytes(16).toString('base64'),
      `${newKey.toString('base64')},x`,
    ]) {
      assert.throws(() => loadConfig({ DATA_ENCRYPTION_KEY: bad }), /^Error: DATA_ENCRYPTION_KEY: /)
    }
  })
})
