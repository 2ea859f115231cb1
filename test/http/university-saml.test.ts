import assert from 'node:assert/strict'
import { createPublicKey, randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { inflateRawSync } from 'node:zlib'
import type { FastifyInstance } from 'fastify'
import xmlenc from 'xml-encryption'
import { readAttributes } from '../../src/config/university-attributes.js'
import type { Db } from '../../src/db/database.js'
import { createSandboxServer } from '../../src/sandbox/routes.js'
import {
  certBody,
  generateSigningKey,
  responseXml,
  signedResponse,
  signElement,
  type ResponseParts,
  type SigningKey,
} from '../../src/sandbox/saml-signing.js'
import type { AttemptStart, CallbackRequest } from '../../src/university/protocol.js'
import { createAssertionStore } from '../../src/university/saml/assertion-store.js'
import {
  createIdpMetadataSource,
  METADATA_MAX_AGE_MS,
  METADATA_RETRY_MS,
  metadataFailure,
} from '../../src/university/saml/idp-metadata.js'
import {
  createSamlProtocol,
  requestIdOf,
  type SamlProtocol,
} from '../../src/university/saml/saml-protocol.js'
import { TestClock } from '../helpers/clock.js'
import { migratedDatabase, type MigratedDatabase } from '../helpers/database.js'
import {
  Browser,
  formAction,
  hiddenFields,
  signInAt,
  startLemonLdap,
  type LemonLdap,
} from '../helpers/lemonldap.js'

// docs/university-providers.md, "SAML": the SAML protocol against the sandbox IdP, against
// LemonLDAP::NG from Debian's packages, and against Responses forged every way a service
// provider must refuse.

const SAML_ATTRIBUTES = readAttributes({}, 'saml')!

function attempt(): AttemptStart {
  return {
    state: `openid-${randomBytes(6).toString('hex')}`,
    cookie: randomBytes(32).toString('base64url'),
  }
}

function posted(fields: Record<string, string>, cookie: string | null): CallbackRequest {
  return { method: 'POST', params: fields, attemptCookie: cookie, ip: '127.0.0.1' }
}

let database: MigratedDatabase
let db: Db
before(async () => {
  database = await migratedDatabase()
  db = database.db
})
after(() => database.drop())

function samlProtocol(
  publicBaseUrl: string,
  idpMetadata: string,
  overrides: Partial<Parameters<typeof createSamlProtocol>[0]> = {},
): SamlProtocol {
  return createSamlProtocol({
    idpMetadata,
    spEntityId: `${publicBaseUrl}/authorize/university/saml`,
    spKey: null,
    spCert: null,
    publicBaseUrl,
    clientId: 'campusgate',
    attributes: SAML_ATTRIBUTES,
    assertions: createAssertionStore(db.kysely),
    clock: new TestClock(Date.now()),
    timeoutMs: 5000,
    ...overrides,
  })
}

describe('SAML against the sandbox IdP', () => {
  let sandbox: FastifyInstance
  let base = ''
  before(async () => {
    sandbox = await createSandboxServer({
      messenger: false,
      university: true,
      universityProtocol: 'saml',
      clientId: 'campusgate',
      clientSecret: '',
      callbackUrl: () => `${base}/authorize/university/callback`,
      clock: new TestClock(Date.now()),
    })
    await sandbox.listen({ host: '127.0.0.1', port: 0 })
    base = `http://127.0.0.1:${(sandbox.server.address() as AddressInfo).port}`
  })
  after(() => sandbox.close())

  /** The SSO page, Allow or Deny, and the auto-post page's fields (as the browser would post them). */
  async function signIn(
    protocol: SamlProtocol,
    start: AttemptStart,
    decision: 'allow' | 'deny' = 'allow',
  ): Promise<Record<string, string>> {
    const sso = new URL(await protocol.authorizeUrl(start))
    const page = await fetch(sso)
    const html = await page.text()
    assert.equal(page.status, 200, html)
    assert.match(html, /\(SAML 2\.0\)/)
    const answer = await fetch(`${base}/_sandbox/saml/sso/decision`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...hiddenFields(html), member: 'ada', decision }).toString(),
    })
    const post = await answer.text()
    assert.equal(answer.status, 200, post)
    // The page posts by a same-origin script or its button: no inline script under its policy.
    assert.match(answer.headers.get('content-security-policy')!, /script-src 'self'/)
    assert.doesNotMatch(post, /<script>/)
    assert.equal(formAction(post), `${base}/authorize/university/callback`)
    return hiddenFields(post)
  }

  it('the 301 carries an AuthnRequest whose ID derives from the cookie, and RelayState', async () => {
    const protocol = samlProtocol(base, `${base}/_sandbox/saml/metadata`)
    const start = attempt()
    const sso = new URL(await protocol.authorizeUrl(start))
    assert.equal(`${sso.origin}${sso.pathname}`, `${base}/_sandbox/saml/sso`)
    assert.equal(sso.searchParams.get('RelayState'), start.state)
    assert.equal(sso.searchParams.get('client_id'), 'campusgate')
    assert.equal(sso.searchParams.get('state'), start.state)
    const request = inflateRawSync(
      Buffer.from(sso.searchParams.get('SAMLRequest')!, 'base64'),
    ).toString('utf8')
    assert.match(request, new RegExp(`ID="${requestIdOf(start.cookie)}"`))
    assert.match(
      request,
      new RegExp(`AssertionConsumerServiceURL="${base}/authorize/university/callback"`),
    )
    assert.match(request, /ProtocolBinding="urn:oasis:names:tc:SAML:2\.0:bindings:HTTP-POST"/)
  })

  it('links on the signed Response, with the attributes by their urn:oid names', async () => {
    const protocol = samlProtocol(base, `${base}/_sandbox/saml/metadata`)
    const start = attempt()
    const fields = await signIn(protocol, start)
    const request = posted(fields, start.cookie)
    assert.deepEqual(await protocol.read(request), {
      kind: 'answer',
      state: start.state,
      cookie: start.cookie,
      denial: null,
    })
    assert.deepEqual(await protocol.complete(request, start), {
      kind: 'linked',
      token: null,
      identity: {
        issuer: `${base}/_sandbox/saml`,
        subject: 'alove01@sandbox-university.example',
        email: 'ada.lovelace.24@sandbox-university.example',
        name: 'Ada Lovelace',
        isStudent: true,
      },
    })
    // The same Response again: a replay.
    const replay = await protocol.complete(request, start)
    assert.deepEqual(replay, {
      kind: 'failed',
      reason: 'SAML Response refused: assertion replayed (its ID was accepted before)',
    })
  })

  it('Deny: a RequestDenied status is a denial', async () => {
    const protocol = samlProtocol(base, `${base}/_sandbox/saml/metadata`)
    const start = attempt()
    const fields = await signIn(protocol, start, 'deny')
    assert.deepEqual(await protocol.read(posted(fields, start.cookie)), {
      kind: 'answer',
      state: start.state,
      cookie: start.cookie,
      denial: { denied: true, reason: 'the IdP answered status Responder/RequestDenied' },
    })
  })

  it("another browser's cookie, or none, is refused before anything is read", async () => {
    const protocol = samlProtocol(base, `${base}/_sandbox/saml/metadata`)
    const start = attempt()
    const fields = await signIn(protocol, start)
    assert.deepEqual(await protocol.read(posted(fields, null)), {
      kind: 'refuse',
      reason: 'no attempt cookie',
    })
    assert.deepEqual(await protocol.read(posted(fields, attempt().cookie)), {
      kind: 'refuse',
      reason: "InResponseTo is not this attempt's request",
    })
    const completion = await protocol.complete(posted(fields, start.cookie), attempt())
    assert.equal(completion.kind, 'failed')
  })

  it('serves SP metadata with the ACS and entity id', () => {
    const metadata = samlProtocol(base, `${base}/_sandbox/saml/metadata`).spMetadata()
    assert.match(metadata, new RegExp(`entityID="${base}/authorize/university/saml"`))
    assert.match(
      metadata,
      new RegExp(
        `AssertionConsumerService[^>]*Binding="urn:oasis:names:tc:SAML:2\\.0:bindings:HTTP-POST"[^>]*Location="${base}/authorize/university/callback"`,
      ),
    )
  })
})

describe('SAML refuses forged Responses', () => {
  const PUBLIC = 'https://campusgate.example.ac.uk'
  const CALLBACK = `${PUBLIC}/authorize/university/callback`
  const IDP = 'https://idp.example.ac.uk/idp/shibboleth'
  let idpKey: SigningKey
  let otherKey: SigningKey
  let metadataFile: string
  before(() => {
    idpKey = generateSigningKey('idp')
    otherKey = generateSigningKey('attacker')
    metadataFile = join(mkdtempSync(join(tmpdir(), 'campusgate-saml-')), 'idp.xml')
    writeFileSync(
      metadataFile,
      `<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="${IDP}"><md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"><md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${certBody(idpKey.cert)}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor><md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.example.ac.uk/idp/profile/SAML2/Redirect/SSO"/></md:IDPSSODescriptor></md:EntityDescriptor>`,
    )
  })

  function parts(start: AttemptStart, change: Partial<ResponseParts> = {}): ResponseParts {
    return {
      idpEntityId: IDP,
      destination: CALLBACK,
      recipient: CALLBACK,
      audience: `${PUBLIC}/authorize/university/saml`,
      inResponseTo: requestIdOf(start.cookie),
      nameId: `persistent-${randomBytes(4).toString('hex')}`,
      attributes: [
        ['urn:oid:1.3.6.1.4.1.5923.1.1.1.6', 'eduPersonPrincipalName', ['alice@example.ac.uk']],
        ['urn:oid:0.9.2342.19200300.100.1.3', 'mail', ['alice@example.ac.uk']],
      ],
      now: Date.now(),
      lifetimeMs: 300_000,
      ...change,
    }
  }

  const b64 = (xml: string) => Buffer.from(xml, 'utf8').toString('base64')

  /** Completes with `xml` posted for `start`; the reason of the refusal. */
  async function refusal(start: AttemptStart, xml: string): Promise<string> {
    const protocol = samlProtocol(PUBLIC, metadataFile)
    const completion = await protocol.complete(
      posted({ SAMLResponse: b64(xml), RelayState: start.state }, start.cookie),
      start,
    )
    assert.equal(completion.kind, 'failed', JSON.stringify(completion))
    return completion.kind === 'failed' ? completion.reason : ''
  }

  it('accepts the genuine Response (so that each refusal below is its change alone)', async () => {
    const start = attempt()
    const protocol = samlProtocol(PUBLIC, metadataFile)
    const xml = signedResponse(parts(start), idpKey)
    const request = posted({ SAMLResponse: b64(xml), RelayState: start.state }, start.cookie)
    assert.equal((await protocol.read(request)).kind, 'answer')
    const completion = await protocol.complete(request, start)
    assert.equal(completion.kind, 'linked', JSON.stringify(completion))
    // Only the assertion signed, and only the Response signed: both accepted.
    for (const element of ['Assertion', 'Response'] as const) {
      const other = attempt()
      const signed = signElement(responseXml(parts(other)), { key: idpKey, element })
      const result = await protocol.complete(
        posted({ SAMLResponse: b64(signed), RelayState: other.state }, other.cookie),
        other,
      )
      assert.equal(result.kind, 'linked', `${element}: ${JSON.stringify(result)}`)
    }
  })

  it('refuses an unsigned Response', async () => {
    const start = attempt()
    assert.match(await refusal(start, responseXml(parts(start))), /signature/i)
  })

  it('refuses a Response signed by another key', async () => {
    const start = attempt()
    assert.match(await refusal(start, signedResponse(parts(start), otherKey)), /signature/i)
  })

  it('refuses signature wrapping: a forged assertion beside the signed one', async () => {
    const start = attempt()
    const genuine = signElement(responseXml(parts(start)), { key: idpKey, element: 'Assertion' })
    const signedAssertion = /<saml:Assertion[\s\S]*<\/saml:Assertion>/.exec(genuine)![0]
    const forged = signedAssertion
      .replace(/ID="[^"]+"/, 'ID="_forged"')
      .replace(/<ds:Signature[\s\S]*<\/ds:Signature>/, '')
      .replace(/alice@example\.ac\.uk/g, 'admin@example.ac.uk')
    // XSW1-style: the forged, unsigned assertion first, the signed one after it.
    assert.match(
      await refusal(start, genuine.replace(signedAssertion, forged + signedAssertion)),
      /assertions|signature/i,
    )
  })

  it('refuses signature wrapping: the signed assertion moved inside an Extensions element', async () => {
    const start = attempt()
    const genuine = signElement(responseXml(parts(start)), { key: idpKey, element: 'Assertion' })
    const signedAssertion = /<saml:Assertion[\s\S]*<\/saml:Assertion>/.exec(genuine)![0]
    const forged = signedAssertion
      .replace(/ID="[^"]+"/, 'ID="_forged"')
      .replace(/<ds:Signature[\s\S]*<\/ds:Signature>/, '')
      .replace(/alice@example\.ac\.uk/g, 'admin@example.ac.uk')
    const wrapped = genuine.replace(
      signedAssertion,
      `<samlp:Extensions>${signedAssertion}</samlp:Extensions>${forged}`,
    )
    assert.match(await refusal(start, wrapped), /assertion|signature|wrapping/i)
  })

  it('refuses signature wrapping: a signed Response whose assertion was swapped', async () => {
    const start = attempt()
    const genuine = signElement(responseXml(parts(start)), { key: idpKey, element: 'Response' })
    const swapped = genuine.replace(/alice@example\.ac\.uk/g, 'admin@example.ac.uk')
    assert.match(await refusal(start, swapped), /signature/i)
  })

  it('refuses a comment inside the NameID (the comment-truncation trick)', async () => {
    const start = attempt()
    const signed = signedResponse(
      parts(start, { nameId: 'alice@example.ac.uk.evil.example' }),
      idpKey,
    )
    // Exclusive c14n without comments: the signature still verifies with the comment added.
    const tricked = signed.replace(
      'alice@example.ac.uk.evil.example</saml:NameID>',
      'alice@example.ac.uk<!---->.evil.example</saml:NameID>',
    )
    assert.notEqual(tricked, signed)
    assert.match(await refusal(start, tricked), /comment/)
  })

  it('refuses another audience', async () => {
    const start = attempt()
    const xml = signedResponse(
      parts(start, { audience: 'https://other-sp.example.org/sp' }),
      idpKey,
    )
    assert.match(await refusal(start, xml), /audience/i)
  })

  it('refuses an expired assertion (beyond the minute of skew)', async () => {
    const start = attempt()
    const xml = signedResponse(
      parts(start, { now: Date.now() - 10 * 60_000, lifetimeMs: 5 * 60_000 }),
      idpKey,
    )
    assert.match(await refusal(start, xml), /expired|NotOnOrAfter|subject ?confirmation/i)
  })

  it('accepts an assertion expired by less than the minute of skew', async () => {
    const start = attempt()
    const xml = signedResponse(
      parts(start, { now: Date.now() - 5 * 60_000 - 30_000, lifetimeMs: 5 * 60_000 + 5000 }),
      idpKey,
    )
    const completion = await samlProtocol(PUBLIC, metadataFile).complete(
      posted({ SAMLResponse: b64(xml), RelayState: start.state }, start.cookie),
      start,
    )
    assert.equal(completion.kind, 'linked', JSON.stringify(completion))
  })

  it('refuses a replay, across protocol instances (the table is shared)', async () => {
    const start = attempt()
    const xml = signedResponse(parts(start), idpKey)
    const request = posted({ SAMLResponse: b64(xml), RelayState: start.state }, start.cookie)
    assert.equal((await samlProtocol(PUBLIC, metadataFile).complete(request, start)).kind, 'linked')
    assert.match(await refusal(start, xml), /replayed/)
  })

  it('refuses an unsolicited Response (no InResponseTo), at read and at complete', async () => {
    const start = attempt()
    const xml = signedResponse(parts(start, { inResponseTo: null }), idpKey)
    const read = await samlProtocol(PUBLIC, metadataFile).read(
      posted({ SAMLResponse: b64(xml), RelayState: start.state }, start.cookie),
    )
    assert.deepEqual(read, { kind: 'refuse', reason: 'unsolicited Response (no InResponseTo)' })
    assert.match(await refusal(start, xml), /InResponseTo/)
  })

  it("refuses a Response to another attempt's request", async () => {
    const start = attempt()
    const xml = signedResponse(parts(attempt()), idpKey)
    assert.match(await refusal(start, xml), /InResponseTo/)
  })

  it('refuses SHA-1 signatures and digests', async () => {
    const start = attempt()
    const xml = responseXml(parts(start))
    const sha1 = signElement(
      signElement(xml, { key: idpKey, element: 'Assertion', algorithm: 'sha1' }),
      {
        key: idpKey,
        element: 'Response',
        algorithm: 'sha1',
      },
    )
    assert.match(
      await refusal(start, sha1),
      /algorithm refused: http:\/\/www\.w3\.org\/2000\/09\/xmldsig#rsa-sha1/,
    )
  })

  it('refuses a DTD', async () => {
    const start = attempt()
    const xml = signedResponse(parts(start), idpKey)
    const withDtd = `<?xml version="1.0"?><!DOCTYPE samlp:Response [<!ENTITY x "y">]>${xml}`
    assert.match(await refusal(start, withDtd), /DTD|well-formed/)
  })

  it('refuses a wrong Recipient', async () => {
    const start = attempt()
    const xml = signedResponse(
      parts(start, { recipient: 'https://other-sp.example.org/acs' }),
      idpKey,
    )
    assert.match(await refusal(start, xml), /Recipient/)
  })

  it('refuses a wrong Destination', async () => {
    const start = attempt()
    const xml = signedResponse(
      parts(start, { destination: 'https://other-sp.example.org/acs' }),
      idpKey,
    )
    assert.match(await refusal(start, xml), /Destination/)
  })

  it('refuses an unsigned assertion beside a signed Response that holds none', async () => {
    const start = attempt()
    const empty = responseXml(parts(start)).replace(/<saml:Assertion[\s\S]*<\/saml:Assertion>/, '')
    const signed = signElement(empty, { key: idpKey, element: 'Response' })
    const unsigned = /<saml:Assertion[\s\S]*<\/saml:Assertion>/.exec(responseXml(parts(start)))![0]
    assert.match(
      await refusal(start, signed.replace('</samlp:Response>', `${unsigned}</samlp:Response>`)),
      /signature/i,
    )
  })
})

describe('SAML against LemonLDAP::NG (Debian packages)', () => {
  const PUBLIC = 'http://campusgate.test'
  let llng: LemonLdap
  before(async () => {
    llng = await startLemonLdap(PUBLIC)
  })
  after(() => llng?.close())

  it('signs in by the portal form and links on its signed Response', async () => {
    const protocol = samlProtocol(PUBLIC, `${llng.url}/saml/metadata`)
    const start = attempt()
    const browser = new Browser()
    let answer = await signInAt(browser, await protocol.authorizeUrl(start), 'dwho')
    // The portal may redirect once more before its auto-post page.
    for (let hops = 0; answer.status === 302 && hops < 5; hops++) {
      answer = await browser.get(new URL(answer.headers.get('location')!, llng.url).toString())
    }
    const html = await answer.text()
    assert.equal(answer.status, 200, html.slice(0, 500))
    assert.equal(formAction(html), `${PUBLIC}/authorize/university/callback`, html.slice(0, 2000))
    const fields = hiddenFields(html)
    assert.equal(fields.RelayState, start.state)
    const request = posted(fields, start.cookie)
    assert.deepEqual(await protocol.read(request), {
      kind: 'answer',
      state: start.state,
      cookie: start.cookie,
      denial: null,
    })
    const completion = await protocol.complete(request, start)
    assert.equal(completion.kind, 'linked', JSON.stringify(completion))
    assert.deepEqual(completion.kind === 'linked' ? completion.identity : null, {
      issuer: `${llng.url}/saml/metadata`,
      subject: completion.kind === 'linked' ? completion.identity?.subject : '',
      email: 'dwho@badwolf.org',
      name: 'Doctor Who',
    })
    assert.match(await protocol.complete(request, start).then((c) => JSON.stringify(c)), /replayed/)
  })
})

describe('SAML IdP metadata: from a URL or a file, read again daily', () => {
  it('is fetched once a day; a failed re-read keeps the old one and tries again an hour later', async () => {
    const key = generateSigningKey('rotating idp')
    let fetches = 0
    let status = 200
    let entityId = 'https://idp.example.ac.uk/one'
    const server = createServer((_request, response) => {
      fetches += 1
      response
        .writeHead(status, { 'content-type': 'application/samlmetadata+xml' })
        .end(metadataXml(entityId, key))
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    try {
      const clock = new TestClock()
      const source = createIdpMetadataSource({
        source: `http://127.0.0.1:${(server.address() as AddressInfo).port}/metadata`,
        clock,
        timeoutMs: 5000,
      })
      assert.equal((await source.current()).entityId, 'https://idp.example.ac.uk/one')
      clock.advance(METADATA_MAX_AGE_MS - 1000)
      await source.current()
      assert.equal(fetches, 1)
      entityId = 'https://idp.example.ac.uk/two'
      clock.advance(1000)
      assert.equal((await source.current()).entityId, 'https://idp.example.ac.uk/two')
      assert.equal(fetches, 2)
      status = 503
      clock.advance(METADATA_MAX_AGE_MS)
      assert.equal((await source.current()).entityId, 'https://idp.example.ac.uk/two')
      assert.equal(fetches, 3)
      clock.advance(METADATA_RETRY_MS - 1000)
      await source.current()
      assert.equal(fetches, 3)
      status = 200
      entityId = 'https://idp.example.ac.uk/three'
      clock.advance(1000)
      assert.equal((await source.current()).entityId, 'https://idp.example.ac.uk/three')
      assert.equal(fetches, 4)
    } finally {
      server.close()
    }
  })

  it('never read: unavailable, with the reason; a file is read the same way', async () => {
    const missing = createIdpMetadataSource({
      source: 'http://127.0.0.1:9/metadata',
      clock: new TestClock(),
      timeoutMs: 2000,
    })
    await assert.rejects(missing.current(), (error: unknown) => {
      assert.match(metadataFailure(error), /^IdP metadata unavailable: request failed: /)
      return true
    })
    const file = join(mkdtempSync(join(tmpdir(), 'campusgate-saml-')), 'idp.xml')
    writeFileSync(file, metadataXml('https://idp.example.ac.uk/file', generateSigningKey('f')))
    const fromFile = createIdpMetadataSource({ source: file, clock: new TestClock(), timeoutMs: 1 })
    assert.equal((await fromFile.current()).entityId, 'https://idp.example.ac.uk/file')
    writeFileSync(file, '<!DOCTYPE x><x/>')
    const withDtd = createIdpMetadataSource({ source: file, clock: new TestClock(), timeoutMs: 1 })
    await assert.rejects(withDtd.current(), (error: unknown) => {
      assert.equal(metadataFailure(error), 'IdP metadata unavailable: the IdP metadata has a DTD')
      return true
    })
  })
})

function metadataXml(entityId: string, key: SigningKey): string {
  return `<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="${entityId}"><md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"><md:KeyDescriptor><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${certBody(key.cert)}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor><md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${entityId}/sso"/></md:IDPSSODescriptor></md:EntityDescriptor>`
}

describe('SAML with a service provider key', () => {
  const PUBLIC = 'https://campusgate.example.ac.uk'
  const CALLBACK = `${PUBLIC}/authorize/university/callback`
  const IDP = 'https://idp.example.ac.uk/idp/shibboleth'
  let idpKey: SigningKey
  let spKey: SigningKey
  let protocol: SamlProtocol
  before(() => {
    idpKey = generateSigningKey('idp')
    spKey = generateSigningKey('sp')
    const file = join(mkdtempSync(join(tmpdir(), 'campusgate-saml-')), 'idp.xml')
    writeFileSync(file, metadataXml(IDP, idpKey))
    protocol = samlProtocol(PUBLIC, file, { spKey: spKey.privateKey, spCert: spKey.cert })
  })

  it('signs the AuthnRequest (RSA-SHA256) and publishes its certificate', async () => {
    const sso = new URL(await protocol.authorizeUrl(attempt()))
    assert.equal(
      sso.searchParams.get('SigAlg'),
      'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
    )
    assert.ok((sso.searchParams.get('Signature') ?? '').length > 100)
    assert.ok(protocol.spMetadata().replace(/\s+/g, '').includes(certBody(spKey.cert)))
  })

  it('decrypts an encrypted assertion, and refuses SHA-1 inside it', async () => {
    for (const algorithm of ['sha256', 'sha1'] as const) {
      const start = attempt()
      const response = responseXml({
        idpEntityId: IDP,
        destination: CALLBACK,
        recipient: CALLBACK,
        audience: `${PUBLIC}/authorize/university/saml`,
        inResponseTo: requestIdOf(start.cookie),
        nameId: `persistent-${algorithm}`,
        attributes: [['urn:oid:0.9.2342.19200300.100.1.3', 'mail', ['bob@example.ac.uk']]],
        now: Date.now(),
        lifetimeMs: 300_000,
      })
      const signed = signElement(response, { key: idpKey, element: 'Assertion', algorithm })
      const assertion = /<saml:Assertion[\s\S]*<\/saml:Assertion>/.exec(signed)![0]
      const encrypted = await new Promise<string>((resolve, reject) =>
        xmlenc.encrypt(
          assertion,
          {
            rsa_pub: createPublicKey(spKey.cert).export({ type: 'spki', format: 'pem' }).toString(),
            pem: spKey.cert,
            encryptionAlgorithm: 'http://www.w3.org/2009/xmlenc11#aes256-gcm',
            keyEncryptionAlgorithm: 'http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p',
          },
          (error, result) => (error ? reject(error) : resolve(result)),
        ),
      )
      const xml = signed.replace(
        assertion,
        `<saml:EncryptedAssertion>${encrypted}</saml:EncryptedAssertion>`,
      )
      const completion = await protocol.complete(
        posted(
          { SAMLResponse: Buffer.from(xml).toString('base64'), RelayState: start.state },
          start.cookie,
        ),
        start,
      )
      if (algorithm === 'sha256') {
        assert.deepEqual(completion, {
          kind: 'linked',
          token: null,
          identity: { issuer: IDP, subject: 'persistent-sha256', email: 'bob@example.ac.uk' },
        })
      } else {
        assert.equal(completion.kind, 'failed')
        assert.match(completion.kind === 'failed' ? completion.reason : '', /algorithm refused/)
      }
    }
  })
})
