import assert from 'node:assert/strict'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import express from 'express'
import Fastify from 'fastify'
import { createClient, type Client } from 'campusgate-node'
import * as forExpress from 'campusgate-node/express'
import * as forFastify from 'campusgate-node/fastify'
import { startService, type RunningService } from '../../../test/helpers/service.js'
import { registerUser } from './apps.js'

/** A backend whose guarded route calls `arrived()` for each request before the guard sees it. */
type Start = (
  client: Client,
  arrived: () => void,
) => Promise<{ url: string; close(): Promise<void> }>

const startExpress: Start = async (client, arrived) => {
  const app = express()
  app.use((_req, _res, next) => {
    arrived()
    next()
  })
  app.get('/profile', forExpress.requireTier(client, 'messenger-registered'), (req, res) => {
    res.json({ openId: req.campusgate!.openId })
  })
  const server = app.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}

const startFastify: Start = async (client, arrived) => {
  const app = Fastify()
  app.addHook('onRequest', async () => arrived())
  app.get(
    '/profile',
    { onRequest: forFastify.requireTier(client, 'messenger-registered') },
    async (request) => ({ openId: request.campusgate!.openId }),
  )
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  return { url, close: () => app.close() }
}

describe('campusgate-node shares identical checks in flight', () => {
  let service: RunningService
  let sessionChecks = 0
  // campusgate holds every GET /session until the test lets it answer.
  let release: () => void = () => undefined
  let gate: Promise<void> = Promise.resolve()

  before(async () => {
    service = await startService(
      {},
      {
        extend: (app) =>
          app.addHook('onRequest', async (request) => {
            if (request.url !== '/session') return
            sessionChecks += 1
            await gate
          }),
      },
    )
  })
  after(() => service.close())

  for (const [name, start] of [
    ['Express', startExpress],
    ['Fastify', startFastify],
  ] as const) {
    it(`${name}: fifty requests at once with one key make one GET /session`, async () => {
      const { key, openId } = await registerUser(service)
      const other = await registerUser(service)
      let arrivals = 0
      let allArrived: () => void = () => undefined
      const arrived = new Promise<void>((resolve) => (allArrived = resolve))
      gate = new Promise((resolve) => (release = resolve))
      const client = createClient({ baseUrl: service.url })
      const backend = await start(client, () => {
        arrivals += 1
        if (arrivals === 51) allArrived()
      })
      try {
        const before = sessionChecks
        const get = (sent: string) =>
          fetch(`${backend.url}/profile`, { headers: { authorization: sent } }).then(
            async (response) => ({
              status: response.status,
              body: (await response.json()) as { openId?: string },
            }),
          )
        const answers = Promise.all([
          ...Array.from({ length: 50 }, () => get(key)),
          get(`Bearer ${other.key}`),
        ])
        // Every request is waiting on its check before campusgate answers any.
        await arrived
        release()
        const all = await answers
        assert.deepEqual(
          all.slice(0, 50).map((answer) => answer.status),
          Array.from({ length: 50 }, () => 200),
        )
        assert.ok(all.slice(0, 50).every((answer) => answer.body.openId === openId))
        assert.deepEqual(all[50], { status: 200, body: { openId: other.openId } })
        assert.equal(sessionChecks - before, 2, 'one GET /session per key, not per request')

        // Once answered, nothing is kept (no cache): the next request asks again.
        assert.equal((await get(key)).status, 200)
        assert.equal(sessionChecks - before, 3)
      } finally {
        release()
        await backend.close()
        await client.close()
      }
    })
  }
})
