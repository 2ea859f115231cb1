import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { createSandboxServer, SANDBOX_APP } from '../../src/sandbox/routes.js'
import { TestClock } from '../helpers/clock.js'

const CLIENT_ID = 'sandbox-client'
const CLIENT_SECRET = 'sandbox-secret'
const CALLBACK = 'https://campusgate.test/authorize/university/callback'

describe('sandbox providers', () => {
  const clock = new TestClock()
  let server: FastifyInstance
  let url: string

  before(async () => {
    server = await createSandboxServer({
      messenger: true,
      university: true,
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      callbackUrl: () => CALLBACK,
      clock,
    })
    url = await server.listen({ port: 0, host: '127.0.0.1' })
  })
  after(() => server.close())

  async function mint(body?: unknown): Promise<{ code: string; openId: string }> {
    const response = await fetch(`${url}/_sandbox/messenger/login-codes`, {
      method: 'POST',
      ...(body === undefined
        ? {}
        : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    })
    assert.equal(response.status, 200)
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/)
    return (await response.json()) as { code: string; openId: string }
  }

  async function code2session(params: Record<string, string>): Promise<any> {
    const query = new URLSearchParams({
      appid: SANDBOX_APP.appId,
      secret: SANDBOX_APP.appSecret,
      grant_type: 'authorization_code',
      ...params,
    })
    const response = await fetch(`${url}/_sandbox/messenger/sns/jscode2session?${query.toString()}`)
    assert.equal(response.status, 200)
    assert.equal(response.headers.get('content-type'), 'text/plain')
    return JSON.parse(await response.text())
  }

  it('mints a login code that code2session exchanges for the openId', async () => {
    const minted = await mint()
    assert.match(minted.openId, /^sandbox-/)
    assert.ok(minted.code.length >= 22)
    const body = await code2session({ js_code: minted.code })
    assert.equal(body.openid, minted.openId)
    assert.equal(typeof body.session_key, 'string')
    assert.equal(typeof body.unionid, 'string')
    assert.equal(body.errcode, undefined)
  })

  it('mints codes for a given openId so the same user can log in again', async () => {
    const first = await mint({ openId: 'returning-user' })
    const second = await mint({ openId: 'returning-user' })
    assert.notEqual(first.code, second.code)
    const a = await code2session({ js_code: first.code })
    const b = await code2session({ js_code: second.code })
    assert.equal(a.openid, 'returning-user')
    assert.equal(b.openid, 'returning-user')
    assert.equal(a.unionid, b.unionid)
  })

  it('answers a reused code with 40163', async () => {
    const { code } = await mint()
    await code2session({ js_code: code })
    assert.deepEqual(await code2session({ js_code: code }), {
      errcode: 40163,
      errmsg: 'code been used',
    })
  })

  it('answers a wrong secret with 40125 and leaves the code usable', async () => {
    const minted = await mint()
    assert.deepEqual(await code2session({ js_code: minted.code, secret: 'wrong' }), {
      errcode: 40125,
      errmsg: 'invalid appsecret',
    })
    assert.equal((await code2session({ js_code: minted.code })).openid, minted.openId)
  })

  it('answers an unknown appid with 40013', async () => {
    const { code } = await mint()
    assert.deepEqual(await code2session({ js_code: code, appid: 'wx-unknown' }), {
      errcode: 40013,
      errmsg: 'invalid appid',
    })
  })

  it('answers a missing code with 41008 and a wrong grant_type with 40002', async () => {
    const query = new URLSearchParams({
      appid: SANDBOX_APP.appId,
      secret: SANDBOX_APP.appSecret,
      grant_type: 'authorization_code',
    })
    const response = await fetch(`${url}/_sandbox/messenger/sns/jscode2session?${query.toString()}`)
    assert.deepEqual(JSON.parse(await response.text()), { errcode: 41008, errmsg: 'missing code' })
    const { code } = await mint()
    assert.deepEqual(await code2session({ js_code: code, grant_type: 'password' }), {
      errcode: 40002,
      errmsg: 'invalid grant_type',
    })
  })

  it('answers an unknown or expired code with 40029', async () => {
    assert.equal((await code2session({ js_code: 'no-such-code' })).errcode, 40029)
    const { code } = await mint()
    clock.advance(5 * 60 * 1000)
    assert.deepEqual(await code2session({ js_code: code }), {
      errcode: 40029,
      errmsg: 'invalid code',
    })
  })

  it('serves an authorise page with Allow and Deny that escapes what it echoes', async () => {
    const query = new URLSearchParams({ client_id: CLIENT_ID, state: '<script>x</script>' })
    const response = await fetch(`${url}/_sandbox/university/authorise?${query.toString()}`)
    assert.equal(response.status, 200)
    assert.match(response.headers.get('content-type') ?? '', /^text\/html/)
    const html = await response.text()
    assert.match(html, /University sign-in \(sandbox\)/)
    assert.match(html, />Allow</)
    assert.match(html, />Deny</)
    assert.match(html, /action="\/_sandbox\/university\/authorise\/decision"/)
    assert.ok(!html.includes('<script>'))
    assert.ok(html.includes('&lt;script&gt;x&lt;/script&gt;'))
  })

  it('refuses the authorise page for an unknown client_id or a missing state', async () => {
    const unknown = await fetch(`${url}/_sandbox/university/authorise?client_id=other&state=s`)
    assert.equal(unknown.status, 400)
    assert.match(unknown.headers.get('content-type') ?? '', /^text\/html/)
    const noState = await fetch(`${url}/_sandbox/university/authorise?client_id=${CLIENT_ID}`)
    assert.equal(noState.status, 400)
  })

  async function decide(decision: string, state = 'open-id-1'): Promise<Response> {
    return fetch(`${url}/_sandbox/university/authorise/decision`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: CLIENT_ID, state, decision }).toString(),
      redirect: 'manual',
    })
  }

  it('redirects Allow to the callback with result, code, client_id, state, client_secret', async () => {
    const response = await decide('allow')
    assert.equal(response.status, 302)
    const location = new URL(response.headers.get('location')!)
    assert.equal(`${location.origin}${location.pathname}`, CALLBACK)
    assert.deepEqual(
      [...location.searchParams.keys()],
      ['result', 'code', 'client_id', 'state', 'client_secret'],
    )
    assert.equal(location.searchParams.get('result'), 'allowed')
    assert.match(location.searchParams.get('code')!, /^[A-Za-z0-9_-]{43}$/)
    assert.equal(location.searchParams.get('client_id'), CLIENT_ID)
    assert.equal(location.searchParams.get('state'), 'open-id-1')
    assert.equal(location.searchParams.get('client_secret'), CLIENT_SECRET)
  })

  it('redirects Deny with result=denied and neither code nor client_secret', async () => {
    const response = await decide('deny')
    assert.equal(response.status, 302)
    const location = new URL(response.headers.get('location')!)
    assert.equal(location.search, `?result=denied&client_id=${CLIENT_ID}&state=open-id-1`)
  })

  it('refuses a decision that is neither allow nor deny', async () => {
    assert.equal((await decide('maybe')).status, 400)
  })

  async function token(params: Record<string, string>): Promise<{ status: number; body: any }> {
    const response = await fetch(
      `${url}/_sandbox/university/token?${new URLSearchParams(params).toString()}`,
    )
    assert.match(response.headers.get('content-type') ?? '', /^application\/json/)
    return { status: response.status, body: (await response.json()) as any }
  }

  async function allowedCode(state: string): Promise<string> {
    const location = new URL((await decide('allow', state)).headers.get('location')!)
    return location.searchParams.get('code')!
  }

  it('exchanges a code once for a token carrying its state', async () => {
    const code = await allowedCode('open-id-2')
    const exchange = { code, client_id: CLIENT_ID, client_secret: CLIENT_SECRET }
    const first = await token(exchange)
    assert.equal(first.status, 200)
    assert.equal(first.body.ok, true)
    assert.match(first.body.token, /^uclapi-sandbox-/)
    assert.equal(first.body.client_id, CLIENT_ID)
    assert.equal(first.body.state, 'open-id-2')
    assert.equal(first.body.scope, '[]')

    const again = await token(exchange)
    assert.equal(again.status, 400)
    assert.equal(again.body.ok, false)
    assert.equal(typeof again.body.error, 'string')
  })

  it('refuses a token exchange with a wrong secret, missing parameters or an expired code', async () => {
    const code = await allowedCode('open-id-3')
    const wrong = await token({ code, client_id: CLIENT_ID, client_secret: 'wrong' })
    assert.equal(wrong.status, 400)
    assert.equal(wrong.body.ok, false)

    const missing = await token({ code, client_id: CLIENT_ID })
    assert.equal(missing.status, 400)
    assert.equal(missing.body.ok, false)

    clock.advance(10 * 60 * 1000)
    const expired = await token({ code, client_id: CLIENT_ID, client_secret: CLIENT_SECRET })
    assert.equal(expired.status, 400)
    assert.equal(expired.body.ok, false)
  })

  it('serves a home page with the walk-through', async () => {
    const response = await fetch(`${url}/_sandbox/`)
    assert.equal(response.status, 200)
    const html = await response.text()
    assert.ok(html.includes('/_sandbox/messenger/login-codes'))
    assert.ok(html.includes('BASE=https://campusgate.test'))
  })
})

describe('sandbox with only the identity provider', () => {
  let server: FastifyInstance
  let url: string
  before(async () => {
    server = await createSandboxServer({
      messenger: false,
      university: true,
      clientId: CLIENT_ID,
      clientSecret: CLIENT_SECRET,
      callbackUrl: () => CALLBACK,
      clock: new TestClock(),
    })
    url = await server.listen({ port: 0, host: '127.0.0.1' })
  })
  after(() => server.close())

  it('does not serve the messenger platform', async () => {
    const response = await fetch(`${url}/_sandbox/messenger/login-codes`, { method: 'POST' })
    assert.equal(response.status, 404)
    const page = await fetch(`${url}/_sandbox/university/authorise?client_id=${CLIENT_ID}&state=s`)
    assert.equal(page.status, 200)
  })
})
