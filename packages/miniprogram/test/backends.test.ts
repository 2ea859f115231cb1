// The app's own backends through the kit: `backends`, request({ url }) to them, and what their
// answers make the kit do (issue 47).
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, beforeEach, describe, it } from 'node:test'
import express from 'express'
import { createClient, type Client } from 'campusgate-node'
import { requireTier } from 'campusgate-node/express'
import {
  CampusgateError,
  createCampusgate,
  URL_NOT_ALLOWED,
  type Campusgate,
} from 'campusgate-miniprogram'
import { SANDBOX_APP } from '../../../src/sandbox/routes.js'
import { call, startService, type RunningService } from '../../../test/helpers/service.js'
import { createWx, type TestPlatform } from './platforms.js'

async function listen(server: Server): Promise<string> {
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

async function rejection(promise: Promise<unknown>): Promise<CampusgateError> {
  const error = await promise.then(
    () => assert.fail('expected a rejection'),
    (reason: unknown) => reason,
  )
  assert.ok(error instanceof CampusgateError, String(error))
  return error
}

describe('campusgate-miniprogram and the app’s own backends', () => {
  let service: RunningService
  let client: Client
  let forum: Server
  let forumUrl: string
  /** Answers every request 401 invalid-session-key: a gateway that strips Authorization. */
  let stripping: Server
  let strippingUrl: string
  let users = 0
  let wx: TestPlatform
  let openId: string
  let campusgate: Campusgate

  before(async () => {
    service = await startService()
    client = createClient({ baseUrl: service.url })
    const app = express()
    app.use(express.json())
    app.get('/posts', requireTier(client, 'messenger-registered'), (req, res) => {
      res.json({ posts: [], you: req.campusgate!.openId, accept: req.headers.accept })
    })
    app.post('/posts', requireTier(client, 'messenger-registered'), (req, res) => {
      res
        .status(201)
        .json({ author: req.campusgate!.openId, text: (req.body as { text: string }).text })
    })
    // The backend's own refusal, which is not campusgate's: no reason to sign in again.
    app.delete('/posts/1', requireTier(client, 'messenger-registered'), (_req, res) => {
      res.status(401).json({ error: 'not-your-post' })
    })
    forum = app.listen(0, '127.0.0.1')
    await once(forum, 'listening')
    forumUrl = `http://127.0.0.1:${(forum.address() as AddressInfo).port}`
    stripping = createServer((_request, response) => {
      response.writeHead(401, { 'content-type': 'application/vnd.service.v1+json' })
      response.end(JSON.stringify({ error: '@unauthorized/invalid-session-key' }))
    })
    strippingUrl = await listen(stripping)
  })
  after(async () => {
    await new Promise((resolve) => forum.close(resolve))
    await new Promise((resolve) => stripping.close(resolve))
    await client.close()
    await service.close()
  })

  beforeEach(() => {
    users += 1
    openId = `backend-user-${process.pid}-${users}`
    wx = createWx(`${service.url}/_sandbox/messenger`, openId)
    campusgate = createCampusgate({
      baseUrl: service.url,
      appId: SANDBOX_APP.appId,
      platform: wx,
      backends: [forumUrl, `${strippingUrl}/`],
    })
  })

  const paths = (): string[] => wx.sent.map((sent) => `${sent.method} ${sent.url}`)

  it('sends the key to a listed backend, signing in first, and resolves with its answer', async () => {
    const posted = await campusgate.request<{ author: string; text: string }>({
      url: `${forumUrl}/posts`,
      method: 'POST',
      data: { text: 'hello' },
    })
    assert.equal(posted.statusCode, 201)
    assert.deepEqual(posted.data, { author: openId, text: 'hello' })
    const key = wx.storage.get('campusgate.sessionKey')
    assert.equal(wx.sent.at(-1)!.header.Authorization, key)
    assert.equal(wx.sent.at(-1)!.header['Content-Type'], 'application/json')
    // The backend gets the Accept the caller asked for, or JSON.
    const listed = await campusgate.request<{ accept: string }>({ url: `${forumUrl}/posts` })
    assert.equal(listed.data.accept, 'application/json')
    const asked = await campusgate.request<{ accept: string }>({
      url: `${forumUrl}/posts?page=2`,
      header: { Accept: 'text/plain' },
    })
    assert.equal(asked.data.accept, 'text/plain')
    assert.equal(wx.logins, 1)
  })

  it('refuses any other URL with url-not-allowed before any login or request', async () => {
    const forumHost = new URL(forumUrl).host
    for (const url of [
      'https://evil.example/posts',
      `https://${forumHost}/posts`, // https, where http is listed
      `http://${forumHost}.evil.example/posts`,
      `http://user@${forumHost}/posts`,
      `http://evil.example@${forumHost}/posts`,
      `http://${forumHost}\\@evil.example/posts`,
      `http://127.0.0.1:1/posts`,
      'session',
      `${forumUrl} /posts`,
      'javascript:alert(1)',
    ]) {
      const error = await rejection(campusgate.request({ url }))
      assert.equal(error.status, 0, url)
      assert.equal(error.code, URL_NOT_ALLOWED, url)
      assert.equal(error.code, '@client/url-not-allowed')
    }
    assert.equal(wx.logins, 0, 'no login')
    assert.deepEqual(wx.sent, [], 'nothing sent, so the key went nowhere')
    // An origin listed with its default port, or in capitals, is the same origin.
    const port = createCampusgate({
      baseUrl: service.url,
      appId: SANDBOX_APP.appId,
      platform: wx,
      backends: ['HTTPS://Forum.Example.EDU:443'],
    })
    const refused = await rejection(port.request({ url: 'https://forum.example.edu.evil/x' }))
    assert.equal(refused.code, URL_NOT_ALLOWED)
  })

  it('refuses backends that are not origins when the kit is made', () => {
    for (const backends of [
      ['forum.example.edu'],
      ['https://forum.example.edu/api'],
      ['ftp://forum.example.edu'],
      ['https://user@forum.example.edu'],
      'https://forum.example.edu',
    ]) {
      assert.throws(
        () =>
          createCampusgate({
            baseUrl: service.url,
            appId: SANDBOX_APP.appId,
            platform: wx,
            backends: backends as string[],
          }),
        TypeError,
        JSON.stringify(backends),
      )
    }
  })

  it("renews a key a backend refuses as invalid-session-key, like campusgate's own", async () => {
    await campusgate.login()
    const old = wx.storage.get('campusgate.sessionKey') as string
    // The key ends elsewhere (the user's own logout from a web page, say).
    await call(`${service.url}/logout`, { method: 'POST', headers: { authorization: old } })
    const changes: string[] = []
    campusgate.onSessionChange((change) => changes.push(change.reason))
    wx.sent.length = 0
    const listed = await campusgate.request<{ you: string }>({ url: `${forumUrl}/posts` })
    assert.equal(listed.data.you, openId)
    // campusgate is asked first whether the key has ended; it has, so the kit signs in again.
    assert.deepEqual(paths(), [
      `GET ${forumUrl}/posts`,
      `GET ${service.url}/session`,
      `POST ${service.url}/register/messenger`,
      `GET ${service.url}/session`,
      `GET ${forumUrl}/posts`,
    ])
    assert.notEqual(wx.storage.get('campusgate.sessionKey'), old)
    assert.deepEqual(changes, ['renewed'])
  })

  it("does not sign in again for a backend's own 401", async () => {
    await campusgate.login()
    const error = await rejection(
      campusgate.request({ url: `${forumUrl}/posts/1`, method: 'DELETE' }),
    )
    assert.equal(error.status, 401)
    assert.equal(error.code, 'not-your-post')
    assert.equal(wx.logins, 1)
  })

  it('never registers while campusgate says the key lives: a backend that refuses every key gets its 401 back', async () => {
    await campusgate.login()
    const key = wx.storage.get('campusgate.sessionKey')
    wx.sent.length = 0
    for (let i = 0; i < 5; i += 1) {
      const error = await rejection(campusgate.request({ url: `${strippingUrl}/posts` }))
      assert.equal(error.status, 401)
      assert.equal(error.code, '@unauthorized/invalid-session-key')
    }
    // Each refusal asked campusgate once; no login, no registration, the key kept.
    assert.equal(wx.logins, 1)
    assert.deepEqual(
      paths().filter((path) => path.startsWith('POST')),
      [],
    )
    assert.equal(paths().filter((path) => path === `GET ${service.url}/session`).length, 5)
    assert.equal(wx.storage.get('campusgate.sessionKey'), key)
    const sessions = await call(`${service.url}/sessions`, {
      headers: { authorization: key as string },
    })
    assert.equal((sessions.body as { sessions: unknown[] }).sessions.length, 1)
  })

  it('keeps the key when campusgate cannot say whether it lives', async () => {
    await campusgate.login()
    const key = wx.storage.get('campusgate.sessionKey')
    // The same storage, and a campusgate address where nothing answers.
    const offline = createCampusgate({
      baseUrl: 'http://127.0.0.1:1',
      appId: SANDBOX_APP.appId,
      platform: wx,
      backends: [`${strippingUrl}/`],
    })
    const error = await rejection(offline.request({ url: `${strippingUrl}/posts` }))
    assert.equal(error.status, 401)
    assert.equal(wx.logins, 1)
    assert.equal(wx.storage.get('campusgate.sessionKey'), key)
  })
})
