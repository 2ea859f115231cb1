import { inflateRawSync } from 'node:zlib'
import { DOMParser } from '@xmldom/xmldom'
import type { FastifyInstance } from 'fastify'
import type { Clock } from '../clock.js'
import { sendHtml } from '../http/html.js'
import { pageLocale } from '../http/locale.js'
import { stringField } from '../lib/coerce.js'
import { escapeHtml, htmlPage } from '../lib/html.js'
import type { Catalogue } from '../lib/locale.js'
import { sendAuthorisePage, sendAuthoriseProblem } from './authorise-page.js'
import { memberFor, type SandboxMember } from './members.js'
import { certBody, generateSigningKey, signedResponse, type SigningKey } from './saml-signing.js'

const SAMLP = 'urn:oasis:names:tc:SAML:2.0:protocol'
const SAML = 'urn:oasis:names:tc:SAML:2.0:assertion'
/** How long the sandbox's assertions are valid: long enough for a person to press Continue. */
const ASSERTION_LIFETIME_MS = 5 * 60_000
const MAX_REQUEST_CHARS = 16 * 1024
/** The auto-post page's script: submits the form, so the browser posts without a click. */
export const AUTO_POST_SCRIPT = "document.getElementById('saml-post').submit()\n"

export interface SandboxSamlOptions {
  /** The IdP's entity id and base: `${PUBLIC_BASE_URL}/_sandbox/saml`. */
  entityId: () => string
  /** campusgate's callback, its assertion consumer service. */
  callbackUrl: () => string
  /** campusgate's SP entity id: the only audience the IdP signs for. */
  spEntityId: () => string
  clock: Clock
}

/** The attributes the sandbox releases, by their `urn:oid:` names with friendly names. */
function attributesOf(member: SandboxMember, scope: string): ResponseAttributes {
  return [
    [
      'urn:oid:1.3.6.1.4.1.5923.1.1.1.6',
      'eduPersonPrincipalName',
      [`${member.upi.toLowerCase()}@${scope}`],
    ],
    ['urn:oid:0.9.2342.19200300.100.1.3', 'mail', [member.email]],
    ['urn:oid:2.16.840.1.113730.3.1.241', 'displayName', [member.full_name]],
    ['urn:oid:2.5.4.42', 'givenName', [member.given_name]],
    [
      'urn:oid:1.3.6.1.4.1.5923.1.1.1.9',
      'eduPersonScopedAffiliation',
      [`${member.is_student ? 'student' : 'staff'}@${scope}`, `member@${scope}`],
    ],
  ]
}
type ResponseAttributes = readonly (readonly [string, string, readonly string[]])[]

const CONTINUE: Catalogue<{ title: string; text: string; button: string }> = {
  en: {
    title: 'Returning to the application (sandbox)',
    text: 'The sandbox identity provider is sending your answer back to the application.',
    button: 'Continue',
  },
  'zh-CN': {
    title: '正在返回应用（沙盒）',
    text: '沙盒身份提供方正在把你的回答送回应用。',
    button: '继续',
  },
}

/** The AuthnRequest of an HTTP-Redirect: its ID, issuer and ACS URL, or why it is refused. */
function readAuthnRequest(encoded: string): { id: string; issuer: string; acs: string } | string {
  if (encoded === '' || encoded.length > MAX_REQUEST_CHARS) return 'SAMLRequest is missing.'
  let xml: string
  try {
    xml = inflateRawSync(Buffer.from(encoded, 'base64'), { maxOutputLength: 64 * 1024 }).toString(
      'utf8',
    )
  } catch {
    return 'SAMLRequest is not a deflated message.'
  }
  let root
  try {
    const document = new DOMParser({
      onError: () => {
        throw new Error('malformed')
      },
    }).parseFromString(xml, 'text/xml')
    if (document.doctype !== null) return 'SAMLRequest has a DTD.'
    root = document.documentElement
  } catch {
    return 'SAMLRequest is not well-formed XML.'
  }
  if (root === null || root.namespaceURI !== SAMLP || root.localName !== 'AuthnRequest') {
    return 'SAMLRequest is not an AuthnRequest.'
  }
  const issuer = root.getElementsByTagNameNS(SAML, 'Issuer')[0]?.textContent?.trim() ?? ''
  return {
    id: root.getAttribute('ID') ?? '',
    issuer,
    acs: root.getAttribute('AssertionConsumerServiceURL') ?? '',
  }
}

/**
 * A SAML 2.0 IdP for the sandbox (`UNIVERSITY_PROTOCOL=saml` with no UNIVERSITY_SAML_IDP_METADATA):
 * its metadata, the SSO endpoint of the HTTP-Redirect binding with the Allow / Deny page and its
 * choice of member, and a Response signed with RSA-SHA256 (the assertion, then the Response) that
 * the browser posts to campusgate's callback: by a same-origin script, or the Continue button.
 */
export function samlRoutes(app: FastifyInstance, options: SandboxSamlOptions): void {
  let key: SigningKey | null = null
  const signingKey = (): SigningKey => (key ??= generateSigningKey('campusgate sandbox SAML IdP'))
  // Made at start-up, so the first sign-in does not wait for it.
  signingKey()
  const config = { versionedMediaType: false }
  const schema = { hide: true }

  app.get('/saml/metadata', { config, schema }, async (_request, reply) => {
    const entityId = escapeHtml(options.entityId())
    const xml = `<?xml version="1.0" encoding="UTF-8"?>
<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#" entityID="${entityId}">
  <md:IDPSSODescriptor WantAuthnRequestsSigned="false" protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <md:KeyDescriptor use="signing"><ds:KeyInfo><ds:X509Data><ds:X509Certificate>${certBody(signingKey().cert)}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>
    <md:NameIDFormat>urn:oasis:names:tc:SAML:2.0:nameid-format:persistent</md:NameIDFormat>
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${entityId}/sso"/>
  </md:IDPSSODescriptor>
</md:EntityDescriptor>
`
    return reply
      .header('cache-control', 'no-store')
      .type('application/samlmetadata+xml; charset=utf-8')
      .send(xml)
  })

  app.get('/saml/sso', { config, schema }, async (request, reply) => {
    const authn = readAuthnRequest(stringField(request.query, 'SAMLRequest'))
    if (typeof authn === 'string') return sendAuthoriseProblem(request, reply, authn)
    if (authn.issuer !== options.spEntityId()) {
      return sendAuthoriseProblem(request, reply, 'The service provider is not registered.')
    }
    if (authn.acs !== '' && authn.acs !== options.callbackUrl()) {
      return sendAuthoriseProblem(request, reply, 'AssertionConsumerServiceURL is not registered.')
    }
    return sendAuthorisePage(request, reply, {
      clientId: authn.issuer,
      action: '/_sandbox/saml/sso/decision',
      hidden: [
        ['request_id', authn.id],
        ['RelayState', stringField(request.query, 'RelayState')],
      ],
      protocol: 'saml',
    })
  })

  app.post('/saml/sso/decision', { config, schema }, async (request, reply) => {
    const relayState = stringField(request.body, 'RelayState')
    const requestId = stringField(request.body, 'request_id')
    const member = memberFor(stringField(request.body, 'member'), relayState)
    if (member === null || requestId === '') {
      return sendAuthoriseProblem(request, reply, 'No such member.')
    }
    const allow = stringField(request.body, 'decision') === 'allow'
    const entityId = options.entityId()
    const xml = signedResponse(
      {
        idpEntityId: entityId,
        destination: options.callbackUrl(),
        recipient: options.callbackUrl(),
        audience: options.spEntityId(),
        inResponseTo: requestId,
        nameId: member.upi,
        attributes: attributesOf(member, 'sandbox-university.example'),
        now: options.clock.now().getTime(),
        lifetimeMs: ASSERTION_LIFETIME_MS,
        ...(allow ? {} : { deniedStatus: 'RequestDenied' }),
      },
      signingKey(),
    )
    const locale = pageLocale(request, reply)
    const text = CONTINUE[locale]
    const body = `<p>${text.text}</p>
<form id="saml-post" method="post" action="${escapeHtml(options.callbackUrl())}">
<input type="hidden" name="SAMLResponse" value="${Buffer.from(xml, 'utf8').toString('base64')}">
<input type="hidden" name="RelayState" value="${escapeHtml(relayState)}">
<button type="submit">${text.button}</button>
</form>`
    const html = htmlPage(text.title, body, { locale, scripts: ['/_sandbox/saml/post.js'] })
    return sendHtml(reply, 200, html, { runsScript: true })
  })

  app.get('/saml/post.js', { config, schema }, async (_request, reply) =>
    reply
      .header('cache-control', 'no-store')
      .header('x-content-type-options', 'nosniff')
      .type('text/javascript; charset=utf-8')
      .send(AUTO_POST_SCRIPT),
  )
}
