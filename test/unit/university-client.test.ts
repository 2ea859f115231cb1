import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { createUniversityClient } from '../../src/university/client.js'

describe('the token exchange client', () => {
  let server: Server
  let answer: { status: number; body: string } = { status: 200, body: '{}' }
  let lastQuery: URLSearchParams | null = null
  let tokenUrl: string

  before(async () => {
    server = createServer((request, response) => {
      lastQuery = new URL(request.url ?? '/', 'http://x').searchParams
      response.writeHead(answer.status, { 'content-type': 'application/json' })
      response.end(answer.body)
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    tokenUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/oauth/token`
  })
  after(() => new Promise<void>((resolve) => server.close(() => resolve())))

  const client = () =>
    createUniversityClient({ tokenUrl, clientId: 'id', clientSecret: 'secret', timeoutMs: 2000 })

  it('sends code, client_id and client_secret, and takes the token of an ok answer', async () => {
    answer = {
      status: 200,
      body: JSON.stringify({ ok: true, token: 'uclapi-token', state: 'open-1' }),
    }
    assert.deepEqual(await client().exchangeCode('voucher', 'open-1'), {
      ok: true,
      token: 'uclapi-token',
    })
    assert.equal(lastQuery?.get('code'), 'voucher')
    assert.equal(lastQuery?.get('client_id'), 'id')
    assert.equal(lastQuery?.get('client_secret'), 'secret')
  })

  it('refuses a voucher the provider issued for another state', async () => {
    answer = { status: 200, body: JSON.stringify({ ok: true, token: 't', state: 'someone-else' }) }
    const result = await client().exchangeCode('voucher', 'open-1')
    assert.equal(result.ok, false)
  })

  it('reports refusals and non-JSON answers without the secret', async () => {
    answer = { status: 400, body: JSON.stringify({ ok: false, error: 'Code is invalid' }) }
    const refused = await client().exchangeCode('voucher', 'open-1')
    assert.deepEqual(refused, {
      ok: false,
      reason: 'token endpoint refused (HTTP 400: Code is invalid)',
    })
    answer = {
      status: 400,
      body: JSON.stringify({ ok: false, error: 'code voucher-123 unknown for secret' }),
    }
    const echoed = await client().exchangeCode('voucher-123', 'open-1')
    assert.deepEqual(echoed, {
      ok: false,
      reason: 'token endpoint refused (HTTP 400: error text withheld: it quotes the voucher)',
    })
    answer = {
      status: 400,
      body: JSON.stringify({ ok: false, error: 'client secret is wrong' }),
    }
    // Only our own secret is cut out: a voucher the caller chose ("is") blanks no word.
    const chosen = await client().exchangeCode('is', 'open-1')
    assert.deepEqual(chosen, {
      ok: false,
      reason: 'token endpoint refused (HTTP 400: error text withheld: it quotes the voucher)',
    })
    answer = { status: 502, body: '<html>bad gateway</html>' }
    const broken = await client().exchangeCode('voucher', 'open-1')
    assert.equal(broken.ok, false)
    assert.ok(!JSON.stringify(broken).includes('secret'))
  })
})
