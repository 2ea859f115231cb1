import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import Fastify from 'fastify'
import { createClient, type Client } from 'campusgate-node'
import { campusgatePlugin, requireTier } from 'campusgate-node/fastify'
import { call, startService, type RunningService } from '../../../test/helpers/service.js'
import { registerUser } from './apps.js'

describe('campusgate-node/fastify declares request.campusgate', () => {
  let service: RunningService
  let client: Client

  before(async () => {
    service = await startService()
    client = createClient({ baseUrl: service.url })
  })
  after(async () => {
    await client.close()
    await service.close()
  })

  it('with decorateRequest: null where no guard ran, the session where one did', async () => {
    const warnings: Error[] = []
    const onWarning = (warning: Error) => warnings.push(warning)
    process.on('warning', onWarning)
    const app = Fastify()
    try {
      await app.register(campusgatePlugin)
      // A second registration (another plugin of the app did it too) is harmless.
      await app.register(campusgatePlugin)
      await app.register(async (feature) => {
        feature.get('/open', async (request) => ({ campusgate: request.campusgate }))
        feature.get(
          '/profile',
          { onRequest: requireTier(client, 'messenger-registered') },
          async (request) => ({ openId: request.campusgate?.openId }),
        )
      })
      await app.ready()
      assert.equal(app.hasRequestDecorator('campusgate'), true)
      const url = await app.listen({ port: 0, host: '127.0.0.1' })
      const { key, openId } = await registerUser(service)
      assert.deepEqual((await call(`${url}/open`)).body, { campusgate: null })
      const guarded = await call(`${url}/profile`, { headers: { authorization: key } })
      assert.deepEqual(guarded.body, { openId })
      await new Promise((resolve) => setImmediate(resolve))
      assert.deepEqual(warnings, [], 'declared: nothing to warn about')
    } finally {
      process.off('warning', onWarning)
      await app.close()
    }
  })

  it('without the plugin still guards, and warns once that the property is undeclared', async () => {
    const warnings: (Error & { code?: string })[] = []
    const onWarning = (warning: Error) => warnings.push(warning)
    process.on('warning', onWarning)
    const app = Fastify()
    try {
      app.get(
        '/profile',
        { onRequest: requireTier(client, 'messenger-registered') },
        async (request) => ({ openId: request.campusgate?.openId }),
      )
      const url = await app.listen({ port: 0, host: '127.0.0.1' })
      const { key, openId } = await registerUser(service)
      for (let i = 0; i < 3; i += 1) {
        const guarded = await call(`${url}/profile`, { headers: { authorization: key } })
        assert.deepEqual(guarded.body, { openId })
      }
      await new Promise((resolve) => setImmediate(resolve))
      assert.deepEqual(
        warnings.map((warning) => warning.code),
        ['CAMPUSGATE_UNDECLARED_REQUEST'],
      )
      assert.match(warnings[0].message, /register campusgatePlugin/)
    } finally {
      process.off('warning', onWarning)
      await app.close()
    }
  })
})
