// requireTier's onRefused, and req.campusgate / request.campusgate: one type, null where no guard ran.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import express from 'express'
import Fastify from 'fastify'
import { createClient, type Client, type Refusal } from 'campusgate-node'
import * as forExpress from 'campusgate-node/express'
import * as forFastify from 'campusgate-node/fastify'
import { call, freePort, startService, type RunningService } from '../../../test/helpers/service.js'
import { registerUser } from './apps.js'

interface App {
  name: string
  url: string
  close(): Promise<void>
}

/**
 * `/open` (no guard) answers what the request's campusgate holds; `/forum` (tier 2) and `/quiet`
 * (tier 1) answer a refusal the app's way: `/forum` with its own JSON, `/quiet` not at all.
 */
async function startApps(client: Client, refusals: Refusal[]): Promise<App[]> {
  const mine = (refusal: Refusal) => ({ message: 'not for you', why: refusal.error })

  const app = express()
  app.get('/open', (req, res) => void res.json({ campusgate: req.campusgate }))
  app.get(
    '/forum',
    forExpress.requireTier(client, 'university-registered', {
      onRefused: (refusal, _req, res) => {
        refusals.push(refusal)
        res.status(refusal.status === 503 ? 503 : 418).json(mine(refusal))
      },
    }),
    (_req, res) => void res.json({ forum: true }),
  )
  app.get(
    '/quiet',
    forExpress.requireTier(client, 'messenger-registered', {
      onRefused: async (refusal) => void refusals.push(refusal),
    }),
    (_req, res) => void res.json({ quiet: true }),
  )
  const server = app.listen(0, '127.0.0.1')
  await once(server, 'listening')

  const fastify = Fastify()
  await fastify.register(forFastify.campusgatePlugin)
  fastify.get('/open', async (request) => ({ campusgate: request.campusgate }))
  fastify.get(
    '/forum',
    {
      onRequest: forFastify.requireTier(client, 'university-registered', {
        onRefused: async (refusal, _request, reply) => {
          refusals.push(refusal)
          return reply.code(refusal.status === 503 ? 503 : 418).send(mine(refusal))
        },
      }),
    },
    async () => ({ forum: true }),
  )
  fastify.get(
    '/quiet',
    {
      onRequest: forFastify.requireTier(client, 'messenger-registered', {
        onRefused: (refusal) => void refusals.push(refusal),
      }),
    },
    async () => ({ quiet: true }),
  )
  const fastifyUrl = await fastify.listen({ port: 0, host: '127.0.0.1' })
  return [
    {
      name: 'Express',
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      close: () => new Promise((resolve) => server.close(() => resolve())),
    },
    { name: 'Fastify', url: fastifyUrl, close: () => fastify.close() },
  ]
}

describe('requireTier(client, tier, { onRefused })', () => {
  let service: RunningService
  let client: Client
  let apps: App[]
  const refusals: Refusal[] = []

  before(async () => {
    service = await startService()
    client = createClient({ baseUrl: service.url })
    apps = await startApps(client, refusals)
  })
  after(async () => {
    for (const app of apps) await app.close()
    await client.close()
    await service.close()
  })

  it('hands every refusal to onRefused, which answers it the app’s own way', async () => {
    const { key } = await registerUser(service)
    for (const app of apps) {
      refusals.length = 0
      for (const [authorization, error] of [
        [undefined, '@forbidden/missing-authorization-header'],
        ['no-such-key-0123456789', '@unauthorized/invalid-session-key'],
        [key, '@forbidden/insufficient-registration-tier'],
      ] as const) {
        const headers: Record<string, string> = authorization === undefined ? {} : { authorization }
        const answer = await call(`${app.url}/forum`, { headers })
        assert.equal(answer.status, 418, `${app.name}: ${answer.text}`)
        assert.deepEqual(answer.body, { message: 'not for you', why: error })
      }
      assert.deepEqual(refusals, [
        { status: 403, error: '@forbidden/missing-authorization-header' },
        { status: 401, error: '@unauthorized/invalid-session-key' },
        { status: 403, error: '@forbidden/insufficient-registration-tier' },
      ])
    }
  })

  it('answers as campusgate does when onRefused answers nothing: it fails closed', async () => {
    for (const app of apps) {
      refusals.length = 0
      const answer = await call(`${app.url}/quiet`, {
        headers: { authorization: 'nope-0123456789' },
      })
      assert.equal(answer.status, 401, app.name)
      assert.deepEqual(answer.body, { error: '@unauthorized/invalid-session-key' })
      assert.equal(refusals.length, 1)
    }
  })

  it('gives the 503 its retryAfter when campusgate cannot be asked', async () => {
    const nowhere = createClient({ baseUrl: `http://127.0.0.1:${await freePort()}` })
    const offline = await startApps(nowhere, refusals)
    try {
      for (const app of offline) {
        refusals.length = 0
        const answer = await call(`${app.url}/forum`, {
          headers: { authorization: 'k-0123456789' },
        })
        assert.equal(answer.status, 503, app.name)
        assert.deepEqual(refusals, [
          { status: 503, error: '@service-unavailable/session-service-unavailable', retryAfter: 5 },
        ])
      }
    } finally {
      for (const app of offline) await app.close()
      await nowhere.close()
    }
  })

  it('leaves req.campusgate and request.campusgate null where no guard ran', async () => {
    for (const app of apps) {
      assert.deepEqual((await call(`${app.url}/open`)).body, { campusgate: null }, app.name)
    }
  })
})
