import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createAssertionStore } from '../../src/university/saml/assertion-store.js'
import { parseIdpMetadata } from '../../src/university/saml/idp-metadata.js'
import { createSamlProtocol } from '../../src/university/saml/saml-protocol.js'
import { startService, type RunningService } from '../helpers/service.js'

// docs/university-providers.md, "Trying it without a provider": with UNIVERSITY_PROTOCOL=cas or
// saml and no server named, `npm start` serves a CAS server or a SAML IdP under /_sandbox/.

describe('the sandbox in CAS mode', () => {
  let service: RunningService
  before(async () => {
    service = await startService({ UNIVERSITY_PROTOCOL: 'cas' })
  })
  after(() => service.close())

  it('points the configuration at its own CAS server', () => {
    assert.deepEqual(service.config.university.cas, {
      url: `${service.url}/_sandbox/cas`,
      version: 3,
    })
  })

  it("serves the login page for campusgate's own service only", async () => {
    const service_ = `${service.url}/authorize/university/callback?state=someone`
    const page = await fetch(
      `${service.url}/_sandbox/cas/login?service=${encodeURIComponent(service_)}`,
    )
    assert.equal(page.status, 200)
    assert.match(await page.text(), /\(CAS\)[\s\S]*name="decision" value="allow"/)
    const foreign = await fetch(
      `${service.url}/_sandbox/cas/login?service=${encodeURIComponent('https://evil.example/cb')}`,
    )
    assert.equal(foreign.status, 400)
  })

  it('the home page names it', async () => {
    assert.match(await (await fetch(`${service.url}/_sandbox/`)).text(), /_sandbox\/cas/)
  })
})

describe('the sandbox in SAML mode', () => {
  let service: RunningService
  before(async () => {
    service = await startService({
      UNIVERSITY_PROTOCOL: 'saml',
      UNIVERSITY_SAML_SP_ENTITY_ID: 'urn:example:campusgate',
    })
  })
  after(() => service.close())

  it('serves IdP metadata that names its signing certificate and SSO endpoint', async () => {
    assert.equal(
      service.config.university.saml?.idpMetadata,
      `${service.url}/_sandbox/saml/metadata`,
    )
    const answer = await fetch(`${service.url}/_sandbox/saml/metadata`)
    assert.equal(answer.status, 200)
    assert.match(answer.headers.get('content-type')!, /^application\/samlmetadata\+xml/)
    const metadata = parseIdpMetadata(await answer.text())
    assert.equal(metadata.entityId, `${service.url}/_sandbox/saml`)
    assert.equal(metadata.ssoRedirectUrl, `${service.url}/_sandbox/saml/sso`)
    assert.equal(metadata.signingCerts.length, 1)
  })

  it('serves the auto-post script from its own origin', async () => {
    const script = await fetch(`${service.url}/_sandbox/saml/post.js`)
    assert.equal(script.status, 200)
    assert.match(script.headers.get('content-type')!, /^text\/javascript/)
    assert.match(await script.text(), /submit\(\)/)
  })

  it('signs in the service provider UNIVERSITY_SAML_SP_ENTITY_ID names', async () => {
    const saml = service.config.university.saml!
    const protocol = createSamlProtocol({
      ...saml,
      publicBaseUrl: service.url,
      clientId: service.config.university.clientId,
      attributes: service.config.university.attributes!,
      assertions: createAssertionStore(service.db.kysely),
      clock: service.clock,
      timeoutMs: 5000,
    })
    const page = await fetch(
      await protocol.authorizeUrl({ state: 'someone', cookie: 'c'.repeat(43) }),
    )
    assert.equal(page.status, 200)
    assert.match(await page.text(), /urn:example:campusgate[\s\S]*\(SAML 2\.0\)/)
  })

  it('refuses an SSO request without an AuthnRequest', async () => {
    assert.equal((await fetch(`${service.url}/_sandbox/saml/sso`)).status, 400)
  })
})
