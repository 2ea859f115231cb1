import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import {
  CampusgateConfigurationError,
  createClient,
  MEDIA_TYPE,
  SessionServiceUnavailableError,
  type CheckFailure,
} from 'campusgate-node'
import { freePort, startService, type RunningService } from '../../../test/helpers/service.js'
import { BACKENDS, registerUser } from './apps.js'

/** Something else at campusgate's address: a web server answering every path with `status`. */
async function startImpostor(
  status: number,
  contentType: string,
  body: string,
): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((_request, response) => {
    response.writeHead(status, { 'content-type': contentType })
    response.end(body)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections()
      return new Promise((resolve) => server.close(() => resolve()))
    },
  }
}

/** One guarded request through each backend; what the client's and the guard's onError heard. */
async function guardedThrough(baseUrl: string) {
  const fromClient: CheckFailure[] = []
  const client = createClient({ baseUrl, timeoutMs: 1000, onError: (e) => fromClient.push(e) })
  const results: { backend: string; status: number; fromGuard: CheckFailure[] }[] = []
  try {
    for (const start of BACKENDS) {
      const fromGuard: CheckFailure[] = []
      const backend = await start(client, undefined, { onError: (e) => fromGuard.push(e) })
      try {
        const response = await fetch(`${backend.url}/profile`, {
          headers: { authorization: 'some-key-0123456789' },
        })
        await response.arrayBuffer()
        results.push({ backend: backend.name, status: response.status, fromGuard })
      } finally {
        await backend.close()
      }
    }
  } finally {
    await client.close()
  }
  return { fromClient, results }
}

describe('campusgate-node reports why it answered 503', () => {
  let service: RunningService

  before(async () => {
    service = await startService()
  })
  after(() => service.close())

  it('hands onError the cause when nothing listens at campusgate, as unavailable', async () => {
    const { fromClient, results } = await guardedThrough(`http://127.0.0.1:${await freePort()}`)
    assert.equal(fromClient.length, 2, 'one failed check per backend')
    for (const { backend, status, fromGuard } of results) {
      assert.equal(status, 503, backend)
      assert.equal(fromGuard.length, 1, backend)
      const [cause] = fromGuard
      assert.ok(cause instanceof SessionServiceUnavailableError, backend)
      assert.equal(cause.kind, 'unavailable')
      assert.equal((cause.cause as { code?: string }).code, 'ECONNREFUSED')
    }
  })

  it('reports a baseUrl where campusgate answers 404 as a configuration error', async () => {
    // campusgate itself, under a path prefix it does not have: GET /api/session is its 404.
    const { fromClient, results } = await guardedThrough(`${service.url}/api`)
    for (const { backend, status, fromGuard } of results) {
      assert.equal(status, 503, backend)
      assert.equal(fromGuard.length, 1, backend)
      assert.ok(fromGuard[0] instanceof CampusgateConfigurationError, backend)
      assert.equal(fromGuard[0].kind, 'configuration')
      assert.match(fromGuard[0].message, /404: is baseUrl campusgate's address\?/)
    }
    assert.equal(fromClient.length, 2)
    assert.ok(fromClient.every((cause) => cause instanceof CampusgateConfigurationError))
  })

  for (const [what, contentType, body] of [
    ['an HTML page', 'text/html; charset=utf-8', '<!doctype html><title>Our app</title>'],
    ['JSON that is not a session', 'application/json', '{"status":"ok"}'],
  ] as const) {
    it(`reports a baseUrl that answers 200 with ${what} as a configuration error`, async () => {
      const impostor = await startImpostor(200, contentType, body)
      try {
        const { fromClient, results } = await guardedThrough(impostor.url)
        for (const { backend, status, fromGuard } of results) {
          assert.equal(status, 503, backend)
          assert.ok(fromGuard[0] instanceof CampusgateConfigurationError, backend)
        }
        assert.ok(fromClient.every((cause) => cause instanceof CampusgateConfigurationError))
        // Asked directly, the client says the same.
        const client = createClient({ baseUrl: impostor.url })
        try {
          await assert.rejects(client.session('some-key-0123456789'), (error: Error) => {
            assert.ok(error instanceof CampusgateConfigurationError)
            assert.match(error.message, /is baseUrl campusgate's address\?/)
            return true
          })
        } finally {
          await client.close()
        }
      } finally {
        await impostor.close()
      }
    })
  }

  it('stops reading an answer far larger than a session, and reports the address', async () => {
    // 200 in campusgate's media type, then more bytes than any session, and no end.
    const server: Server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': MEDIA_TYPE })
      response.write(`{"openId":"${'x'.repeat(100_000)}`)
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    const client = createClient({
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      timeoutMs: 5000,
    })
    try {
      const started = Date.now()
      await assert.rejects(client.session('some-key-0123456789'), (error: Error) => {
        assert.ok(error instanceof CampusgateConfigurationError, error.message)
        assert.match(error.message, /more than \d+ bytes: is baseUrl/)
        return true
      })
      assert.ok(Date.now() - started < 2500, 'without waiting for the timeout')
    } finally {
      await client.close()
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })

  it('without onError, warns once that baseUrl is wrong, and says nothing of an outage', async () => {
    const warnings: (Error & { code?: string })[] = []
    const onWarning = (warning: Error) => warnings.push(warning)
    process.on('warning', onWarning)
    const wrong = createClient({ baseUrl: `${service.url}/api` })
    const down = createClient({ baseUrl: `http://127.0.0.1:${await freePort()}` })
    try {
      for (let i = 0; i < 3; i += 1) {
        await assert.rejects(wrong.session('some-key-0123456789'), CampusgateConfigurationError)
        await assert.rejects(down.session('some-key-0123456789'), SessionServiceUnavailableError)
      }
      await new Promise((resolve) => setImmediate(resolve))
      assert.deepEqual(
        warnings.map((warning) => warning.code),
        ['CAMPUSGATE_CONFIGURATION'],
      )
      assert.match(warnings[0].message, /\/api\/session answered 404: is baseUrl/)
    } finally {
      process.off('warning', onWarning)
      await wrong.close()
      await down.close()
    }
  })

  it('still reads campusgate at the right address, and a logger that throws changes no answer', async () => {
    const { key } = await registerUser(service)
    const client = createClient({
      baseUrl: service.url,
      onError: () => {
        throw new Error('the logger broke')
      },
    })
    try {
      assert.equal((await client.session(key))?.tier, 'messenger-registered')
      const broken = createClient({
        baseUrl: `http://127.0.0.1:${await freePort()}`,
        onError: () => {
          throw new Error('the logger broke')
        },
      })
      try {
        await assert.rejects(broken.session(key), SessionServiceUnavailableError)
      } finally {
        await broken.close()
      }
    } finally {
      await client.close()
    }
  })
})
