import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
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
    assert.deepEqual(config.secrets.dataEncryptionKeys, [newKey, oldKey])
    for (const bad of [
      'short',
      randomBytes(16).toString('base64'),
      `${newKey.toString('base64')},x`,
    ]) {
      assert.throws(() => loadConfig({ DATA_ENCRYPTION_KEY: bad }), /^Error: DATA_ENCRYPTION_KEY: /)
    }
  })
})

describe('the key file', () => {
  it('is shared by instances starting together: none reads it half written', async () => {
    const module = new URL('../../src/lib/encryption.ts', import.meta.url).href
    for (let round = 0; round < 3; round += 1) {
      const dir = mkdtempSync(join(tmpdir(), 'campusgate-key-'))
      const path = join(dir, 'campusgate.key')
      // Every process waits for the same moment, then loads or creates the key.
      const at = Date.now() + 1_500
      const code = `const { loadOrCreateKeyFile } = await import(${JSON.stringify(module)})
        while (Date.now() < ${at}) {}
        try { console.log(loadOrCreateKeyFile(${JSON.stringify(path)}).key.toString('hex')) }
        catch (error) { console.log('failed: ' + error.message) }`
      const outputs = await Promise.all(
        Array.from({ length: 12 }, () =>
          promisify(execFile)(process.execPath, [
            '--import',
            'tsx',
            '--input-type=module',
            '-e',
            code,
          ]),
        ),
      )
      const keys = new Set(outputs.map(({ stdout }) => stdout.trim()))
      assert.equal(keys.size, 1, [...keys].join('\n'))
      assert.match([...keys][0], /^[0-9a-f]{64}$/)
      assert.deepEqual(readdirSync(dir), ['campusgate.key'])
      rmSync(dir, { recursive: true })
    }
  })
})
