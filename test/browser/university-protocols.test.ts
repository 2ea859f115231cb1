import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import type { Browser, Request } from 'playwright-core'
import { createSandboxServer } from '../../src/sandbox/routes.js'
import { launchChromium } from '../helpers/chromium.js'
import { TestClock } from '../helpers/clock.js'
import { call, freePort, startService, type RunningService } from '../helpers/service.js'
import { startSmtpSink, type SmtpSink } from '../helpers/smtp-sink.js'
import { userAskingForTier2 } from '../helpers/stack.js'

/**
 * Tier 2 through CAS and SAML in Chromium (docs/university-providers.md, "The round trip"), with
 * the university's server on another site than campusgate: the CAS server and the SAML IdP are a
 * sandbox server of their own at 127.0.0.1, campusgate is at localhost. The IdP's POST is then
 * cross-site, so Chromium does not send the SameSite=Lax attempt cookie with it; campusgate's
 * re-post from its own origin brings it, under the page's content security policy.
 */
describe('tier 2 in Chromium through CAS and SAML, the university on another site', () => {
  let browser: Browser
  before(async () => {
    browser = await launchChromium()
  })
  after(async () => {
    await browser?.close()
  })

  /** The university's server on 127.0.0.1 and campusgate on localhost, configured for it. */
  async function startAcrossSites(protocol: 'cas' | 'saml') {
    const port = await freePort()
    const campusgate = `http://localhost:${port}`
    let idpBase = ''
    const clock = new TestClock(Date.now())
    const idp: FastifyInstance = await createSandboxServer({
      messenger: true,
      university: true,
      universityProtocol: protocol,
      clientId: 'campusgate',
      clientSecret: '',
      callbackUrl: () => `${campusgate}/authorize/university/callback`,
      selfUrl: () => idpBase,
      clock,
    })
    await idp.listen({ host: '127.0.0.1', port: 0 })
    idpBase = `http://127.0.0.1:${(idp.server.address() as AddressInfo).port}`
    const smtp: SmtpSink = await startSmtpSink()
    // What started is stopped when campusgate does not start, so no handle holds the process.
    const service: RunningService = await startService(
      {
        PORT: String(port),
        PUBLIC_BASE_URL: campusgate,
        UNIVERSITY_PROTOCOL: protocol,
        UNIVERSITY_CLIENT_ID: 'campusgate',
        SMTP_URL: smtp.url,
        MESSENGER_API_BASE_URL: `${idpBase}/_sandbox/messenger`,
        ...(protocol === 'cas'
          ? { UNIVERSITY_CAS_URL: `${idpBase}/_sandbox/cas` }
          : { UNIVERSITY_SAML_IDP_METADATA: `${idpBase}/_sandbox/saml/metadata` }),
      },
      { clock },
    ).catch(async (error: unknown) => {
      await smtp.stop()
      await idp.close()
      throw error
    })
    return {
      service,
      async close() {
        await service.close()
        await smtp.stop()
        await idp.close()
      },
      /** A messenger user who asked for tier 2: their key and the emailed link. */
      userWithLink: () => userAskingForTier2({ service, smtp }, `${idpBase}/_sandbox/messenger`),
      async tierOf(sessionKey: string): Promise<string> {
        const session = await call(`${service.url}/session`, {
          headers: { authorization: sessionKey },
        })
        return session.body.tier as string
      },
    }
  }

  for (const protocol of ['cas', 'saml'] as const) {
    it(`${protocol}: Allow at the university links the account, Deny links nothing`, async () => {
      const across = await startAcrossSites(protocol)
      try {
        const violations: string[] = []
        for (const [decision, heading, tier] of [
          ['Allow', 'University account linked', 'university-registered'],
          ['Deny', 'Authorization declined', 'messenger-registered'],
        ] as const) {
          const { sessionKey, link } = await across.userWithLink()
          const page = await browser.newPage()
          page.on('console', (message) => {
            if (/Content Security Policy/i.test(message.text())) violations.push(message.text())
          })
          const requests: Request[] = []
          page.on('request', (request) => requests.push(request))
          await page.goto(link)
          assert.ok(page.url().startsWith('http://127.0.0.1:'), page.url())
          await page.getByRole('button', { name: decision }).click()
          await page.getByRole('heading', { level: 1, name: heading }).waitFor()
          assert.ok(
            page
              .url()
              .startsWith(
                `${across.service.url.replace('127.0.0.1', 'localhost')}/authorize/university/callback`,
              ),
            page.url(),
          )
          assert.equal(await across.tierOf(sessionKey), tier)
          const posts: string[] = []
          for (const request of requests) {
            if (request.method() !== 'POST' || !request.url().includes('/university/callback')) {
              continue
            }
            const cookie = (await request.allHeaders()).cookie
            posts.push(`${request.url()} ${cookie === undefined ? 'no cookie' : 'cookie'}`)
          }
          if (protocol === 'saml') {
            // The IdP's post came without the cookie; campusgate's own re-post brought it.
            assert.equal(posts.length, 2, posts.join('\n'))
            assert.match(posts[0], / no cookie$/)
            assert.match(posts[1], / cookie$/)
          }
          await page.close()
        }
        assert.deepEqual(violations, [])
      } finally {
        await across.close()
      }
    })
  }
})
