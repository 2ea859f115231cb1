import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { Tier } from '../../src/sessions/service.js'
import { call, startService } from '../helpers/service.js'

describe('requireTier', () => {
  it('refuses, when the route is defined, a tier it does not know', async () => {
    const thrown: string[] = []
    const service = await startService(
      {},
      {
        extend: (app) => {
          for (const tier of ['admin', 'university-registred', 'toString', '__proto__', '']) {
            try {
              app.get(`/t/${tier.length}`, { onRequest: app.requireTier(tier as Tier) }, () => ({}))
            } catch (error) {
              thrown.push((error as Error).message)
            }
          }
        },
      },
    )
    try {
      assert.equal(thrown.length, 5, thrown.join('\n'))
      assert.match(thrown[0], /unknown tier "admin"/)
      // None of them was mounted, so none admits anyone.
      assert.equal((await call(`${service.url}/t/5`)).status, 404)
    } finally {
      await service.close()
    }
  })
})
