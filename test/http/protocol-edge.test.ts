import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { errorLines } from '../helpers/logs.js'
import { abortedRequest, rawRequest, type RawAnswer } from '../helpers/raw-http.js'
import { call, MEDIA_TYPE, startService, type RunningService } from '../helpers/service.js'

function assertErrorAnswer(answer: RawAnswer, status: number, code: string): void {
  assert.equal(answer.status, status, JSON.stringify(answer))
  assert.equal(answer.headers['content-type'], MEDIA_TYPE)
  assert.equal(answer.headers['cache-control'], 'no-store')
  assert.equal(answer.headers['x-content-type-options'], 'nosniff')
  assert.deepEqual(JSON.parse(answer.body), { error: code })
}

const postHead = (length: number) =>
  'POST /register/messenger HTTP/1.1\r\nHost: x\r\n' +
  `Content-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`

describe('answers at the protocol edge', () => {
  let service: RunningService
  before(async () => {
    service = await startService({ REQUEST_TIMEOUT: '1s' })
  })
  after(() => service.close())

  it('answers an unparseable request 400 malformed-request and closes', async () => {
    const answer = await rawRequest(service.url, 'HELLO THERE\r\n\r\n')
    assertErrorAnswer(answer, 400, '@bad-request/malformed-request')
    assert.ok(answer.closed)
  })

  it('answers a malformed request line that is visibly not HEAD with its error body', async () => {
    for (const line of [
      'get /readyz HTTP/1.1',
      'G3T /register/messenger HTTP/1.1',
      'HEADX /session HTTP/1.1',
      'GET /session HTTP/9.9',
    ]) {
      const answer = await rawRequest(service.url, `${line}\r\nHost: x\r\n\r\n`)
      assertErrorAnswer(answer, 400, '@bad-request/malformed-request')
      assert.ok(answer.closed, line)
    }
    // Two spaces after the method: Node 20's parser lets them pass, later ones refuse them; a
    // refusal carries its body either way.
    for (const line of ['POST  /user HTTP/1.1', '\r\nDELETE  /user HTTP/1.1']) {
      const answer = await rawRequest(
        service.url,
        `${line}\r\nHost: x\r\nConnection: close\r\n\r\n`,
      )
      if (answer.status === 400) assertErrorAnswer(answer, 400, '@bad-request/malformed-request')
      else assert.notEqual(answer.body, '', line)
    }
  })

  it('leaves the body out of a 400 when the refused bytes could be a HEAD request', async () => {
    for (const line of ['HEAD /session HTTP/9.9', 'HEAD /a b HTTP/1.1', 'head /session HTTP/1.1']) {
      const answer = await rawRequest(service.url, `${line}\r\nHost: x\r\n\r\n`)
      assert.equal(answer.status, 400, line)
      assert.equal(answer.headers['content-type'], MEDIA_TYPE, line)
      assert.equal(answer.body, '', line)
      assert.ok(answer.closed, line)
    }
  })

  it('answers a URL that cannot be decoded 400 malformed-request', async () => {
    for (const path of ['/%c0', '/session/%zz']) {
      const answer = await rawRequest(
        service.url,
        `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
      )
      assertErrorAnswer(answer, 400, '@bad-request/malformed-request')
    }
  })

  it('answers headers that are too large 431 headers-too-large', async () => {
    const answer = await rawRequest(
      service.url,
      `GET /session HTTP/1.1\r\nHost: x\r\nX-Filler: ${'a'.repeat(20_000)}\r\n\r\n`,
    )
    assertErrorAnswer(answer, 431, '@request-header-fields-too-large/headers-too-large')
    assert.ok(answer.closed)
  })

  it('sends no body with the 431 of a HEAD request, so the client reads no second answer', async () => {
    const answer = await rawRequest(
      service.url,
      `HEAD /session?x=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    )
    assert.equal(answer.status, 431)
    assert.equal(answer.body, '')
    assert.ok(answer.closed)
  })

  it('answers a body not received within REQUEST_TIMEOUT 408 and closes the connection', async () => {
    const answer = await rawRequest(service.url, `${postHead(100)}{"appId":`)
    assertErrorAnswer(answer, 408, '@request-timeout/request-timed-out')
    assert.ok(answer.closed)
  })

  it('answers headers not received within REQUEST_TIMEOUT 408 and closes the connection', async () => {
    const answer = await rawRequest(service.url, 'GET /session HTTP/1.1\r\nHost: x\r\n')
    assertErrorAnswer(answer, 408, '@request-timeout/request-timed-out')
    assert.ok(answer.closed)
  })

  it('writes no error-level line when a client drops its request mid-body', async () => {
    const before = service.logs().length
    await abortedRequest(service.url, `${postHead(100)}{"appId":`)
    for (let i = 0; i < 200 && !service.logs().slice(before).includes('request-aborted'); i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    assert.match(service.logs().slice(before), /request-aborted/)
    assert.deepEqual(errorLines(service), [])
  })

  it('sends no body with a HEAD answer', async () => {
    for (const path of ['/nowhere', '/session', '/openapi.json', '/authorize/university']) {
      const answer = await rawRequest(
        service.url,
        `HEAD ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
      )
      assert.ok(answer.status >= 200, path)
      assert.equal(answer.body, '', path)
    }
  })

  it('accepts application/json with parameters, as most clients send it', async () => {
    for (const type of [
      'application/json; charset=utf-8',
      'application/json;charset=UTF-8',
      'application/vnd.service.v1+json; charset=utf-8',
    ]) {
      const response = await call(`${service.url}/register/messenger`, {
        method: 'POST',
        headers: { 'content-type': type },
        body: '{}',
      })
      assert.equal(response.status, 400, type)
      assert.deepEqual(response.body, { error: '@bad-request/missing-required-keys' })
    }
    const other = await call(`${service.url}/register/messenger`, {
      method: 'POST',
      headers: { 'content-type': 'application/jsonp; charset=utf-8' },
      body: '{}',
    })
    assert.equal(other.status, 415)
  })

  it('marks JSON answers no-store and nosniff, the session key included', async () => {
    const login = await call(`${service.url}/_sandbox/messenger/login-codes`, {
      method: 'POST',
      json: {},
    })
    const registered = await call(`${service.url}/register/messenger`, {
      method: 'POST',
      json: { appId: login.body.appId, appSecret: login.body.appSecret, code: login.body.code },
    })
    assert.equal(registered.status, 200)
    const answers = [
      registered,
      await call(`${service.url}/session`, {
        headers: { authorization: registered.body.sessionKey },
      }),
      await call(`${service.url}/nowhere`),
      await call(`${service.url}/openapi.json`),
    ]
    for (const answer of answers) {
      assert.equal(answer.headers.get('cache-control'), 'no-store')
      assert.equal(answer.headers.get('x-content-type-options'), 'nosniff')
    }
    // The emailed link keeps the seed's exact no-cache header on every answer.
    const link = await call(`${service.url}/authorize/university?universityRegistrationCode=x`)
    assert.equal(link.status, 401)
    assert.equal(link.headers.get('cache-control'), 'no-cache, no-store, must-revalidate')
    assert.equal(link.headers.get('x-content-type-options'), 'nosniff')
  })

  it('has written no error-level line for any of this', () => {
    assert.deepEqual(errorLines(service), [])
  })
})
