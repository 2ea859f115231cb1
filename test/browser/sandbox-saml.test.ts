import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import Fastify, { type FastifyInstance } from 'fastify'
import type { Browser } from 'playwright-core'
import { sandboxRoutes } from '../../src/sandbox/routes.js'
import { launchChromium } from '../helpers/chromium.js'
import { TestClock } from '../helpers/clock.js'

/**
 * The sandbox SAML IdP's page in Chromium, under its content security policy (no inline script):
 * pressing Allow posts the signed Response to the callback by itself, through the same-origin
 * script. The callback here only records what arrives; campusgate's own is tested with it later.
 */
describe('the sandbox SAML IdP posts its Response in Chromium', () => {
  let server: FastifyInstance
  let browser: Browser
  let base = ''
  const received: Record<string, string>[] = []
  const violations: string[] = []
  before(async () => {
    server = Fastify()
    sandboxRoutes(server, {
      messenger: false,
      university: true,
      universityProtocol: 'saml',
      clientId: 'campusgate',
      clientSecret: '',
      callbackUrl: () => `${base}/authorize/university/callback`,
      clock: new TestClock(Date.now()),
    })
    // The callback in a context of its own: the sandbox's context parses its forms itself.
    void server.register(async (scope) => {
      scope.addContentTypeParser(
        'application/x-www-form-urlencoded',
        { parseAs: 'string' },
        (_request, body: string, done) => done(null, Object.fromEntries(new URLSearchParams(body))),
      )
      scope.post('/authorize/university/callback', async (request, reply) => {
        received.push(request.body as Record<string, string>)
        return reply.type('text/html').send('<title>received</title>')
      })
    })
    await server.listen({ host: '127.0.0.1', port: 0 })
    base = `http://127.0.0.1:${(server.server.address() as AddressInfo).port}`
    browser = await launchChromium()
  })
  after(async () => {
    await browser?.close()
    await server?.close()
  })

  it('Allow: the page posts SAMLResponse and RelayState to the callback without a click more', async () => {
    // A minimal AuthnRequest, deflated, as campusgate's HTTP-Redirect sends it.
    const { deflateRawSync } = await import('node:zlib')
    const request = `<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_abc" Version="2.0" IssueInstant="${new Date().toISOString()}" AssertionConsumerServiceURL="${base}/authorize/university/callback"><saml:Issuer>${base}/authorize/university/saml</saml:Issuer></samlp:AuthnRequest>`
    const sso = new URL(`${base}/_sandbox/saml/sso`)
    sso.searchParams.set('SAMLRequest', deflateRawSync(request).toString('base64'))
    sso.searchParams.set('RelayState', 'openid-in-chromium')
    const page = await browser.newPage()
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) violations.push(message.text())
    })
    await page.goto(sso.toString())
    await page.getByRole('button', { name: 'Allow' }).click()
    await page.waitForURL(`${base}/authorize/university/callback`)
    assert.equal(await page.title(), 'received')
    assert.equal(received.length, 1)
    assert.equal(received[0].RelayState, 'openid-in-chromium')
    assert.match(
      Buffer.from(received[0].SAMLResponse, 'base64').toString('utf8'),
      /InResponseTo="_abc"/,
    )
    assert.deepEqual(violations, [])
    await page.close()
  })
})
