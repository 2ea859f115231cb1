import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { call, freePort, startService } from '../helpers/service.js'

describe('rate limits while Redis is unreachable', () => {
  it('keep serving requests (fail open) and log the outage once', async () => {
    const service = await startService({ REDIS_URL: `redis://127.0.0.1:${await freePort()}` })
    try {
      const responses = await Promise.all(
        Array.from({ length: 5 }, () => call(`${service.url}/session`)),
      )
      assert.deepEqual(
        responses.map((r) => r.status),
        [403, 403, 403, 403, 403],
      )
      const warnings = service
        .logs()
        .split('\n')
        .filter((line) => line.includes('redis unavailable'))
      assert.equal(warnings.length, 1)
    } finally {
      await service.close()
    }
  })
})
