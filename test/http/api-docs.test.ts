import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { ERRORS } from '../../src/errors.js'
import { errorLines } from '../helpers/logs.js'
import { rawRequest } from '../helpers/raw-http.js'
import { call, MEDIA_TYPE, startService, type RunningService } from '../helpers/service.js'
import { registerMessenger, startStack, type Stack } from '../helpers/stack.js'

const REDOCLY = resolve('node_modules/.bin/redocly')
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options']

type Operation = { operationId?: string; security?: unknown[]; responses?: Record<string, any> }

function operations(document: any): [string, Operation][] {
  return Object.entries(document.paths as Record<string, Record<string, Operation>>).flatMap(
    ([path, item]) =>
      Object.entries(item)
        .filter(([method]) => METHODS.includes(method))
        .map(([method, operation]): [string, Operation] => [`${method} ${path}`, operation]),
  )
}

describe('API documentation', () => {
  let stack: Stack
  let guarded: RunningService

  before(async () => {
    stack = await startStack({ PUBLIC_BASE_URL: 'https://campusgate.example.edu' })
    guarded = await startService({ METRICS_TOKEN: 'metrics-token-0123456789abcdef' })
  })
  after(async () => {
    await stack.close()
    await guarded.close()
  })

  it('GET /docs serves Swagger UI with its assets from this server, nothing from elsewhere', async () => {
    const page = await fetch(`${stack.service.url}/docs`, { headers: { accept: 'text/html' } })
    assert.equal(page.status, 200)
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/)
    assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'self'/)
    const html = await page.text()
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1])
    assert.ok(assets.some((asset) => asset.endsWith('swagger-ui-bundle.js')))
    for (const asset of assets) {
      assert.doesNotMatch(asset, /^(https?:)?\/\//, `${asset} is loaded from elsewhere`)
      const response = await fetch(new URL(asset, `${stack.service.url}/docs`))
      assert.equal(response.status, 200, asset)
      await response.arrayBuffer()
    }
    // The page reads the same document as /openapi.json.
    const shown = await call(`${stack.service.url}/docs/json`)
    assert.deepEqual(shown.body, (await call(`${stack.service.url}/openapi.json`)).body)
  })

  it('answers an asset request it cannot serve as asked 404 unknown-endpoint, not 500', async () => {
    const asset = 'docs/static/swagger-ui.css'
    const refused: [string, Record<string, string>][] = [
      ['/docs/static/../../../package.json', {}],
      ['/docs/static/%00x', {}],
      [`/${asset}`, { 'if-match': '"not-this-one"' }],
      [`/${asset}`, { range: 'bytes=999999999-' }],
    ]
    for (const [path, headers] of refused) {
      const answer = await rawRequest(
        stack.service.url,
        `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n` +
          Object.entries(headers)
            .map(([name, value]) => `${name}: ${value}\r\n`)
            .join('') +
          '\r\n',
      )
      assert.equal(answer.status, 404, `${path} ${JSON.stringify(headers)}`)
      assert.deepEqual(JSON.parse(answer.body), { error: '@not-found/unknown-endpoint' })
    }
    assert.deepEqual(errorLines(stack.service), [])
  })

  it('names the server, an operationId on every operation and security on every one', async () => {
    const document = (await call(`${stack.service.url}/openapi.json`)).body
    assert.deepEqual(document.servers, [{ url: 'https://campusgate.example.edu' }])
    assert.deepEqual(Object.keys(document.components.securitySchemes), ['sessionKey'])
    const ids = new Set<string>()
    for (const [name, operation] of operations(document)) {
      assert.match(operation.operationId ?? '', /^[a-z][A-Za-z]+$/, `${name} has no operationId`)
      assert.ok(!ids.has(operation.operationId!), `${name}: operationId used twice`)
      ids.add(operation.operationId!)
      assert.ok(Array.isArray(operation.security), `${name} declares no security`)
    }
    for (const name of [
      'post /logout',
      'get /session',
      'delete /user',
      'post /register/university',
    ])
      assert.deepEqual(Object.fromEntries(operations(document))[name]?.security, [
        { sessionKey: [] },
      ])
    const guardedDocument = (await call(`${guarded.url}/openapi.json`)).body
    assert.deepEqual(guardedDocument.paths['/metrics'].get.security, [{ metricsToken: [] }])
  })

  it('lists every error code of the table, where it is answered or as a shared response', async () => {
    const document = (await call(`${guarded.url}/openapi.json`)).body
    const documented = new Set<string>()
    const collect = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(collect)
      else if (node !== null && typeof node === 'object') {
        const enumerated = (node as { error?: { enum?: unknown } }).error?.enum
        if (Array.isArray(enumerated)) for (const code of enumerated) documented.add(String(code))
        Object.values(node).forEach(collect)
      }
    }
    collect(document)
    const missing = Object.values(ERRORS)
      .map((row) => row.code)
      .filter((code) => !documented.has(code))
    assert.deepEqual(missing, [])
    // What an app route behind requireTier('university-registered') answers a tier-1 session.
    const shared = document.components.responses.insufficientRegistrationTier
    assert.deepEqual(shared.content[MEDIA_TYPE].schema.properties.error.enum, [
      '@forbidden/insufficient-registration-tier',
    ])
  })

  it('documents what a route answers to a body it does not expect', async () => {
    const { sessionKey } = await registerMessenger(stack)
    const response = await call(`${stack.service.url}/logout`, {
      method: 'POST',
      headers: { authorization: sessionKey, 'content-type': 'text/plain' },
      body: 'bye',
    })
    assert.equal(response.status, 415)
    const document = (await call(`${stack.service.url}/openapi.json`)).body
    const documented = document.paths['/logout'].post.responses['415'].content[MEDIA_TYPE]
    assert.deepEqual(documented.schema.properties.error.enum, [response.body.error])
  })

  it('passes redocly lint with the recommended rules, with and without METRICS_TOKEN', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'campusgate-openapi-'))
    try {
      const files = []
      for (const [name, service] of [
        ['open', stack.service],
        ['guarded', guarded],
      ] as const) {
        const file = join(dir, `${name}.json`)
        writeFileSync(file, (await call(`${service.url}/openapi.json`)).text)
        files.push(file)
      }
      const lint = spawnSync(REDOCLY, ['lint', '--extends', 'recommended', ...files], {
        cwd: dir,
        encoding: 'utf8',
        env: {
          ...process.env,
          REDOCLY_TELEMETRY: 'off',
          REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
        },
        timeout: 120_000,
      })
      const output = `${lint.stdout}${lint.stderr}`
      assert.equal(lint.status, 0, output)
      assert.match(output, /Your API descriptions? (is|are) valid/)
      assert.doesNotMatch(output, /You have \d+ errors?/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
