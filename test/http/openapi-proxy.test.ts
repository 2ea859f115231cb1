import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { freePort, MEDIA_TYPE } from '../helpers/service.js'
import { mintLoginCode, registerMessenger, startStack, type Stack } from '../helpers/stack.js'
import { SANDBOX_APP } from '../../src/sandbox/routes.js'
import { ensureToolFolder } from '../../scripts/tool-folder.mjs'

/** Prism and its stacks (Postman's, Faker) are installed on first use, apart from npm ci. */
const PRISM_FOLDER = 'test/tools/prism'

interface Violation {
  location: string[]
  code: string | number
  message: string
  severity: string
}

/**
 * Stoplight Prism as a validating proxy in front of the service: an independent reading of the
 * OpenAPI document checks every answer against it, and says what does not match in the
 * `sl-violations` header.
 */
describe('the OpenAPI document, checked by Stoplight Prism as a validating proxy', () => {
  let stack: Stack
  let prism: ChildProcess
  let proxy = ''
  let dir = ''
  const seen: { request: string; status: number; violations: Violation[] }[] = []

  before(async () => {
    const prismBin = join(ensureToolFolder(PRISM_FOLDER), 'node_modules/.bin/prism')
    stack = await startStack()
    dir = mkdtempSync(join(tmpdir(), 'campusgate-prism-'))
    const document = join(dir, 'openapi.json')
    writeFileSync(document, await (await fetch(`${stack.service.url}/openapi.json`)).text())
    const port = await freePort()
    prism = spawn(
      prismBin,
      [
        'proxy',
        document,
        stack.service.url,
        '--port',
        String(port),
        '--errors=false',
        '-v',
        'warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    )
    proxy = `http://127.0.0.1:${port}`
    const deadline = Date.now() + 30_000
    for (;;) {
      try {
        await (await fetch(`${proxy}/healthz`)).arrayBuffer()
        break
      } catch (error) {
        if (Date.now() > deadline) throw error
        await new Promise((resolve) => setTimeout(resolve, 200))
      }
    }
  })
  after(async () => {
    prism?.kill('SIGTERM')
    await stack?.close()
    if (dir !== '') rmSync(dir, { recursive: true, force: true })
  })

  /** One request through the proxy; records what Prism found wrong with it or its answer. */
  async function through(
    method: string,
    path: string,
    init: { headers?: Record<string, string>; body?: string } = {},
  ): Promise<{ status: number; body: string }> {
    const response = await fetch(`${proxy}${path}`, {
      method,
      headers: init.headers,
      body: init.body,
      redirect: 'manual',
    })
    const body = await response.text()
    const header = response.headers.get('sl-violations')
    seen.push({
      request: `${method} ${path}`,
      status: response.status,
      violations: header === null ? [] : (JSON.parse(header) as Violation[]),
    })
    return { status: response.status, body }
  }

  const json = (value: unknown, type = 'application/json') => ({
    headers: { 'content-type': type },
    body: typeof value === 'string' ? value : JSON.stringify(value),
  })

  it('finds no answer that contradicts the document', async () => {
    const login = await mintLoginCode(stack)
    const credentials = { appId: SANDBOX_APP.appId, appSecret: SANDBOX_APP.appSecret }
    const registered = await through(
      'POST',
      '/register/messenger',
      json({ ...credentials, code: login.code }),
    )
    assert.equal(registered.status, 200, registered.body)
    const { sessionKey } = JSON.parse(registered.body) as { sessionKey: string }
    const auth = { authorization: sessionKey }
    await through('POST', '/register/messenger', json({}))
    await through('POST', '/register/messenger', json('{"appId":'))
    await through('POST', '/register/messenger', json('{}', 'text/plain'))
    await through('POST', '/register/messenger', json({ a: 'x'.repeat(20_000) }))
    await through('POST', '/register/messenger', json({ ...credentials, code: 'unknown' }))
    await through('GET', '/session', { headers: auth })
    await through('GET', '/session', { headers: { ...auth, accept: `${MEDIA_TYPE}; version=2` } })
    await through('GET', '/session')
    await through('GET', '/session', { headers: { authorization: 'not-a-key' } })
    const email = json({ email: 'student@example.edu' })
    await through('POST', '/register/university', {
      ...email,
      headers: { ...email.headers, ...auth },
    })
    await through('POST', '/register/university', json({ email: 'student@example.edu' }))
    await through('GET', '/authorize/university?universityRegistrationCode=unknown')
    await through('GET', '/authorize/university')
    await through('GET', '/authorize/university/callback?code=x&state=y')
    for (const path of [
      '/openapi.json',
      '/docs',
      '/docs/static/nope.css',
      '/healthz',
      '/readyz',
      '/metrics',
    ])
      await through('GET', path)
    await through('GET', '/nowhere')
    // POST /logout and DELETE /user need no body, but read one that is sent.
    const other = await registerMessenger(stack)
    const otherAuth = { authorization: other.sessionKey }
    await through('POST', '/logout', {
      headers: { ...otherAuth, 'content-type': 'application/json' },
      body: '{',
    })
    await through('POST', '/logout', {
      headers: { ...otherAuth, 'content-type': 'text/plain' },
      body: 'x',
    })
    await through('DELETE', '/user', {
      headers: { ...otherAuth, 'content-type': 'application/json' },
      body: 'x'.repeat(20_000),
    })
    assert.equal((await through('POST', '/logout', { headers: otherAuth })).status, 200)
    await through('POST', '/logout', { headers: otherAuth })
    const erased = await registerMessenger(stack)
    const erase = await through('DELETE', '/user', {
      headers: { authorization: erased.sessionKey, 'content-type': 'application/json' },
      body: '{}',
    })
    assert.equal(erase.status, 200, erase.body)
    await through('DELETE', '/user', { headers: auth })

    const contradictions = seen.flatMap(({ request, status, violations }) =>
      violations
        // An answer the document does not allow, or a route it does not have.
        .filter(
          (violation) =>
            violation.location[0] === 'response' ||
            (violation.message === 'Selected route not found' && request !== 'GET /nowhere'),
        )
        .map(
          (violation) =>
            `${request} -> ${status}: ${violation.message} (${violation.location.join('.')})`,
        ),
    )
    assert.deepEqual(contradictions, [])
  })
})
