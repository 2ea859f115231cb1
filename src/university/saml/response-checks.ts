import type { Document, Element } from '@xmldom/xmldom'
import {
  childElements,
  descendants,
  hasCommentOrInstruction,
  textOnly,
  XmlRefused,
} from '../xml.js'

// docs/university-providers.md, "SAML": what campusgate checks of a Response besides what
// node-saml checks (the signature against the metadata's keys, the assertion taken from the
// signed bytes only, InResponseTo, the validity window, the audience). Each check throws
// `XmlRefused` with a reason for the log.

export const SAMLP = 'urn:oasis:names:tc:SAML:2.0:protocol'
export const SAML = 'urn:oasis:names:tc:SAML:2.0:assertion'
const DS = 'http://www.w3.org/2000/09/xmldsig#'
const XENC = 'http://www.w3.org/2001/04/xmlenc#'
const BEARER = 'urn:oasis:names:tc:SAML:2.0:cm:bearer'
const SUCCESS = 'urn:oasis:names:tc:SAML:2.0:status:Success'
export const PERSISTENT = 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent'

/** SHA-1 and MD5 are refused, in signatures and in digests (docs/university-providers.md). */
const SIGNATURE_METHODS = new Set([
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha384',
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha512',
])
const DIGEST_METHODS = new Set([
  'http://www.w3.org/2001/04/xmlenc#sha256',
  'http://www.w3.org/2001/04/xmldsig-more#sha384',
  'http://www.w3.org/2001/04/xmlenc#sha512',
])

/** The Response's top-level status: Success, or the codes that say why not. */
export function statusOf(response: Element): { success: boolean; codes: string[] } {
  const status = childElements(response, SAMLP, 'Status')[0]
  const codes: string[] = []
  let code = status === undefined ? undefined : childElements(status, SAMLP, 'StatusCode')[0]
  while (code !== undefined && codes.length < 3) {
    codes.push(code.getAttribute('Value') ?? '')
    code = childElements(code, SAMLP, 'StatusCode')[0]
  }
  return { success: codes[0] === SUCCESS, codes }
}

/** The `samlp:Response` root of a posted document, or why it is not one. */
export function responseOf(document: Document): Element {
  const root = document.documentElement!
  if (root.namespaceURI !== SAMLP || root.localName !== 'Response') {
    throw new XmlRefused('the message is not a samlp:Response')
  }
  if (root.getAttribute('Version') !== '2.0') throw new XmlRefused('the Response is not SAML 2.0')
  return root
}

/**
 * Checks of the whole posted document, before node-saml sees it: no comment or processing
 * instruction anywhere (node-saml reads a NameID up to a comment the signature does not cover),
 * only SHA-256 or stronger in every signature and digest, one assertion and only as a child of
 * the Response (an unsigned assertion beside a signed one, or one wrapped elsewhere, is refused),
 * and a Destination that is the callback (required when the Response itself is signed).
 */
export function checkDocument(
  response: Element,
  { callbackUrl, decrypting }: { callbackUrl: string; decrypting: boolean },
): void {
  if (hasCommentOrInstruction(response)) {
    throw new XmlRefused('the Response holds a comment or a processing instruction')
  }
  checkAlgorithms(response)
  const assertions = descendants(response, SAML, 'Assertion')
  const encrypted = descendants(response, SAML, 'EncryptedAssertion')
  if (assertions.length + encrypted.length !== 1) {
    throw new XmlRefused(
      `the Response holds ${assertions.length} assertions and ${encrypted.length} encrypted ones, not one`,
    )
  }
  const only = assertions[0] ?? encrypted[0]
  if (only.parentNode !== response) {
    throw new XmlRefused('the assertion is not a child of the Response (signature wrapping)')
  }
  if (encrypted.length === 1 && !decrypting) {
    throw new XmlRefused('the assertion is encrypted and no UNIVERSITY_SAML_SP_KEY is set')
  }
  const destination = response.getAttribute('Destination')
  const signed = childElements(response, DS, 'Signature').length > 0
  if (destination === null || destination === '') {
    if (signed) throw new XmlRefused('the signed Response has no Destination')
  } else if (destination !== callbackUrl) {
    throw new XmlRefused('the Response Destination is not the callback')
  }
}

/** Every SignatureMethod and DigestMethod below `root` is SHA-256 or stronger. */
export function checkAlgorithms(root: Element): void {
  for (const method of descendants(root, DS, 'SignatureMethod')) {
    const algorithm = method.getAttribute('Algorithm') ?? ''
    if (!SIGNATURE_METHODS.has(algorithm)) {
      throw new XmlRefused(`signature algorithm refused: ${algorithm.slice(0, 100) || 'none'}`)
    }
  }
  for (const method of descendants(root, DS, 'DigestMethod')) {
    // Inside xenc:EncryptedKey a DigestMethod names the OAEP hash, which xml-encryption judges.
    if (method.parentNode !== null && (method.parentNode as Element).namespaceURI === XENC) continue
    const algorithm = method.getAttribute('Algorithm') ?? ''
    if (!DIGEST_METHODS.has(algorithm)) {
      throw new XmlRefused(`digest algorithm refused: ${algorithm.slice(0, 100) || 'none'}`)
    }
  }
}

export interface VerifiedAssertion {
  id: string
  issuer: string
  /** When the assertion stops being usable (epoch ms): its SubjectConfirmationData's NotOnOrAfter. */
  notOnOrAfter: number
  nameId: { value: string; format: string | null } | null
  /** Attributes by Name and by FriendlyName. */
  attributes: Map<string, string[]>
}

function time(value: string | null, what: string): number | null {
  if (value === null || value === '') return null
  const ms = Date.parse(value)
  if (Number.isNaN(ms)) throw new XmlRefused(`${what} is not a time`)
  return ms
}

export interface AssertionExpectations {
  issuer: string
  audience: string
  recipient: string
  requestId: string
  nowMs: number
  skewMs: number
}

/**
 * Reads the assertion node-saml verified (the signed bytes, re-parsed) and checks what node-saml
 * does not: its issuer, a bearer SubjectConfirmation whose Recipient is the callback and whose
 * InResponseTo is this attempt's request, the validity windows with the skew, the audience, and
 * a NameID and attribute values of text only.
 */
export function checkAssertion(
  document: Document,
  expected: AssertionExpectations,
): VerifiedAssertion {
  const assertion = document.documentElement!
  if (assertion.namespaceURI !== SAML || assertion.localName !== 'Assertion') {
    throw new XmlRefused('the signed element is not a saml:Assertion')
  }
  if (hasCommentOrInstruction(assertion)) {
    throw new XmlRefused('the assertion holds a comment or a processing instruction')
  }
  const id = assertion.getAttribute('ID') ?? ''
  if (id === '' || id.length > 256) throw new XmlRefused('the assertion has no ID')
  const issuers = childElements(assertion, SAML, 'Issuer')
  const issuer = issuers.length === 1 ? textOnly(issuers[0], 'saml:Issuer') : ''
  if (issuer !== expected.issuer) throw new XmlRefused('the assertion Issuer is not the IdP')
  const { nowMs, skewMs } = expected

  const subject = childElements(assertion, SAML, 'Subject')[0]
  if (subject === undefined) throw new XmlRefused('the assertion has no Subject')
  const nameIdElement = childElements(subject, SAML, 'NameID')[0]
  const nameId =
    nameIdElement === undefined
      ? null
      : {
          value: textOnly(nameIdElement, 'saml:NameID'),
          format: nameIdElement.getAttribute('Format'),
        }
  let notOnOrAfter: number | null = null
  for (const confirmation of childElements(subject, SAML, 'SubjectConfirmation')) {
    if (confirmation.getAttribute('Method') !== BEARER) continue
    const data = childElements(confirmation, SAML, 'SubjectConfirmationData')[0]
    if (data === undefined) continue
    if (data.getAttribute('Recipient') !== expected.recipient) continue
    if (data.getAttribute('InResponseTo') !== expected.requestId) continue
    const before = time(data.getAttribute('NotBefore'), 'SubjectConfirmationData NotBefore')
    const after = time(data.getAttribute('NotOnOrAfter'), 'SubjectConfirmationData NotOnOrAfter')
    if (after === null) continue
    if (before !== null && nowMs + skewMs < before) continue
    if (nowMs - skewMs >= after) continue
    notOnOrAfter = after
    break
  }
  if (notOnOrAfter === null) {
    throw new XmlRefused(
      'no bearer SubjectConfirmation for this callback (Recipient), this request (InResponseTo) and this time',
    )
  }

  const conditions = childElements(assertion, SAML, 'Conditions')
  if (conditions.length !== 1) throw new XmlRefused('the assertion has no single Conditions')
  const condition = conditions[0]
  const before = time(condition.getAttribute('NotBefore'), 'Conditions NotBefore')
  const after = time(condition.getAttribute('NotOnOrAfter'), 'Conditions NotOnOrAfter')
  if (before !== null && nowMs + skewMs < before)
    throw new XmlRefused('the assertion is not yet valid')
  if (after !== null && nowMs - skewMs >= after) throw new XmlRefused('the assertion has expired')
  const restrictions = childElements(condition, SAML, 'AudienceRestriction')
  if (restrictions.length === 0) throw new XmlRefused('the assertion has no AudienceRestriction')
  // Every restriction must admit this SP (SAML core §2.5.1.4).
  for (const restriction of restrictions) {
    const audiences = childElements(restriction, SAML, 'Audience').map((audience) =>
      textOnly(audience, 'saml:Audience'),
    )
    if (!audiences.includes(expected.audience)) {
      throw new XmlRefused('the assertion Audience is not this service provider')
    }
  }

  const attributes = new Map<string, string[]>()
  for (const statement of childElements(assertion, SAML, 'AttributeStatement')) {
    for (const attribute of childElements(statement, SAML, 'Attribute')) {
      const values = childElements(attribute, SAML, 'AttributeValue').map((value) =>
        textOnly(value, 'saml:AttributeValue'),
      )
      for (const name of [attribute.getAttribute('Name'), attribute.getAttribute('FriendlyName')]) {
        if (name === null || name === '') continue
        attributes.set(name, [...(attributes.get(name) ?? []), ...values])
      }
    }
  }
  return {
    id,
    issuer,
    notOnOrAfter: after === null ? notOnOrAfter : Math.min(after, notOnOrAfter),
    nameId,
    attributes,
  }
}
