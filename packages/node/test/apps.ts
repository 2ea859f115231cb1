// The app's other backends, as a team would write them with the kit: a real Express app and a
// real Fastify app on loopback, in front of a running campusgate.
import { once } from 'node:events'
import type { AddressInfo, Server } from 'node:net'
import { createServer, type Socket } from 'node:net'
import express from 'express'
import Fastify from 'fastify'
import { type Client, type GuardOptions, type WebhookOptions } from 'campusgate-node'
import * as forExpress from 'campusgate-node/express'
import * as forFastify from 'campusgate-node/fastify'
import { SANDBOX_APP } from '../../../src/sandbox/routes.js'
import { call, type RunningService } from '../../../test/helpers/service.js'

export interface Backend {
  name: 'Express' | 'Fastify'
  url: string
  close(): Promise<void>
}

type Webhooks = Omit<WebhookOptions, 'client'>

/** `GET /forum` (tier 2), `GET /profile` (tier 1) and `POST /campusgate/events`. */
export async function startExpress(
  client: Client,
  webhooks?: Webhooks,
  guard?: GuardOptions,
): Promise<Backend> {
  const app = express()
  app.get('/forum', forExpress.requireTier(client, 'university-registered', guard), (req, res) => {
    res.json({ forum: true, openId: req.campusgate!.openId })
  })
  app.get('/profile', forExpress.requireTier(client, 'messenger-registered', guard), (req, res) => {
    res.json({ openId: req.campusgate!.openId, tier: req.campusgate!.tier })
  })
  if (webhooks !== undefined) {
    app.post('/campusgate/events', forExpress.webhookHandler({ client, ...webhooks }))
  }
  const server = app.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    name: 'Express',
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}

export async function startFastify(
  client: Client,
  webhooks?: Webhooks,
  guard?: GuardOptions,
): Promise<Backend> {
  const app = Fastify()
  await app.register(forFastify.campusgatePlugin)
  app.get(
    '/forum',
    { onRequest: forFastify.requireTier(client, 'university-registered', guard) },
    async (request) => ({ forum: true, openId: request.campusgate!.openId }),
  )
  app.get(
    '/profile',
    { onRequest: forFastify.requireTier(client, 'messenger-registered', guard) },
    async (request) => ({ openId: request.campusgate!.openId, tier: request.campusgate!.tier }),
  )
  if (webhooks !== undefined) {
    await app.register(forFastify.webhookHandler({ client, ...webhooks }), {
      prefix: '/campusgate/events',
    })
  }
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  return { name: 'Fastify', url, close: () => app.close() }
}

export const BACKENDS = [startExpress, startFastify] as const

/** A new user registers at campusgate through its sandbox messenger; returns the session key. */
export async function registerUser(
  service: RunningService,
  openId?: string,
): Promise<{ key: string; openId: string }> {
  const minted = await call(`${service.url}/_sandbox/messenger/login-codes`, {
    method: 'POST',
    json: openId === undefined ? {} : { openId },
  })
  const registered = await call(`${service.url}/register/messenger`, {
    method: 'POST',
    json: { appId: SANDBOX_APP.appId, appSecret: SANDBOX_APP.appSecret, code: minted.body.code },
  })
  if (registered.status !== 200) throw new Error(registered.text)
  return { key: registered.body.sessionKey as string, openId: minted.body.openId as string }
}

/** A TCP server that accepts connections and never answers: campusgate hanging. */
export async function startSilentServer(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>()
  const server: Server = createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      }),
  }
}
