import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { call, MEDIA_TYPE, startService, type RunningService } from '../helpers/service.js'

describe('media type and unknown endpoints', () => {
  let service: RunningService
  before(async () => {
    service = await startService()
  })
  after(() => service.close())

  it('answers an unknown endpoint with 404 unknown-endpoint in the versioned media type', async () => {
    const response = await call(`${service.url}/no/such/thing`)
    assert.equal(response.status, 404)
    assert.equal(response.headers.get('content-type'), MEDIA_TYPE)
    assert.deepEqual(response.body, { error: '@not-found/unknown-endpoint' })
  })

  it('refuses an Accept that names only another version with 406', async () => {
    const response = await call(`${service.url}/session`, {
      headers: { accept: 'application/vnd.service.v2+json' },
    })
    assert.equal(response.status, 406)
    assert.equal(response.headers.get('content-type'), MEDIA_TYPE)
    assert.deepEqual(response.body, { error: '@not-acceptable/unsupported-api-version' })
  })

  for (const accept of [
    '*/*',
    'application/*',
    'application/json',
    'application/vnd.service+json',
    MEDIA_TYPE,
    'application/vnd.service.v2+json, application/vnd.service.v1+json;q=0.5',
  ]) {
    it(`serves v1 for Accept: ${accept}`, async () => {
      const response = await call(`${service.url}/session`, { headers: { accept } })
      assert.equal(response.status, 403)
      assert.equal(response.headers.get('content-type'), MEDIA_TYPE)
    })
  }

  it('serves v1 when Accept is missing', async () => {
    const response = await fetch(`${service.url}/session`)
    assert.equal(response.status, 403)
    assert.equal(response.headers.get('content-type'), MEDIA_TYPE)
  })

  it('serves the OpenAPI 3.1 document', async () => {
    const response = await call(`${service.url}/openapi.json`)
    assert.equal(response.status, 200)
    assert.equal(response.body.openapi, '3.1.0')
    assert.ok(response.body.paths['/register/messenger'])
  })
})
