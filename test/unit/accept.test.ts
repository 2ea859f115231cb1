import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { acceptsV1 } from '../../src/http/media-type.js'
import { sessionKeyFrom } from '../../src/http/tier-guard.js'
import { retryDelayMs } from '../../src/lib/outbox.js'

describe('acceptsV1', () => {
  it('accepts v1, its unversioned and wildcard forms, and no Accept at all', () => {
    for (const accept of [
      undefined,
      '',
      '*/*',
      'application/*',
      'application/json',
      'application/vnd.service+json',
      'application/vnd.service.v1+json',
      'text/html,application/xhtml+xml,*/*;q=0.8',
      'text/html',
    ]) {
      assert.equal(acceptsV1(accept), true, String(accept))
    }
  })

  it('refuses an Accept that names only other versions, or refuses v1 with q=0', () => {
    for (const accept of [
      'application/vnd.service.v2+json',
      'application/vnd.service.v2+json, application/vnd.service.v3+json',
      'application/vnd.service.v1+json;q=0, application/vnd.service.v2+json',
    ]) {
      assert.equal(acceptsV1(accept), false, accept)
    }
  })

  it('never throws, whatever the header', () => {
    fc.assert(fc.property(fc.string(), (accept) => typeof acceptsV1(accept) === 'boolean'))
  })
})

describe('sessionKeyFrom', () => {
  it('takes the raw key or a Bearer key', () => {
    assert.equal(sessionKeyFrom('abc'), 'abc')
    assert.equal(sessionKeyFrom('Bearer abc'), 'abc')
    assert.equal(sessionKeyFrom('bearer   abc'), 'abc')
    assert.equal(sessionKeyFrom(undefined), null)
    assert.equal(sessionKeyFrom('  '), null)
  })
})

describe('retryDelayMs', () => {
  it('doubles from the base and stops at the cap', () => {
    const backoff = { firstMs: 2000, maxMs: 60_000, factor: 2, jitter: 0 }
    assert.deepEqual(
      [1, 2, 3, 4, 10].map((n) => retryDelayMs(n, backoff)),
      [2000, 4000, 8000, 16_000, 60_000],
    )
  })

  it('draws the jitter either way of the delay, never beyond it', () => {
    const backoff = { firstMs: 10_000, maxMs: 60_000, factor: 4, jitter: 0.25 }
    assert.equal(
      retryDelayMs(1, backoff, () => 0),
      7500,
    )
    assert.equal(
      retryDelayMs(1, backoff, () => 0.5),
      10_000,
    )
    assert.equal(
      retryDelayMs(2, backoff, () => 0.999_999),
      50_000,
    )
    assert.equal(
      retryDelayMs(3, backoff, () => 1),
      75_000,
    )
  })
})
