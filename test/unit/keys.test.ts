import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { redact } from '../../src/lib/redact.js'
import { generateSecret, hashSecret, secretsEqual } from '../../src/lib/secrets.js'

describe('secrets', () => {
  it('are 256 bits as 43 base64url characters, never repeated', () => {
    const seen = new Set<string>()
    for (let i = 0; i < 1000; i += 1) {
      const secret = generateSecret()
      assert.match(secret, /^[A-Za-z0-9_-]{43}$/)
      assert.equal(Buffer.from(secret, 'base64url').length, 32)
      seen.add(secret)
    }
    assert.equal(seen.size, 1000)
  })

  it('hash to SHA-256 hex', () => {
    assert.equal(
      hashSecret('abc'),
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    )
  })

  it('compare equal exactly when they are equal, whatever their lengths', () => {
    fc.assert(fc.property(fc.string(), fc.string(), (a, b) => secretsEqual(a, b) === (a === b)))
  })

  it('are redacted from text, as written and URL-encoded', () => {
    assert.equal(
      redact('GET /x?secret=a%2Fb&code=c0de failed (a/b)', ['a/b', 'c0de', '']),
      'GET /x?secret=[redacted]&code=[redacted] failed ([redacted])',
    )
  })
})
