import { generateKeyPairSync, randomBytes } from 'node:crypto'
import forge from 'node-forge'
import { SignedXml } from 'xml-crypto'
import { escapeHtml } from '../lib/html.js'

// The sandbox SAML IdP's keys and Responses: an RSA key made at start-up with a self-signed
// certificate (node-forge), and Responses signed by xml-crypto (RSA-SHA256, exclusive c14n).

export interface SigningKey {
  /** PEM, PKCS#8. */
  privateKey: string
  /** PEM certificate. */
  cert: string
}

/** A fresh RSA key and a self-signed certificate for it, valid from an hour ago for ten years. */
export function generateSigningKey(commonName: string): SigningKey {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const privatePem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
  const cert = forge.pki.createCertificate()
  cert.publicKey = forge.pki.publicKeyFromPem(
    publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  )
  cert.serialNumber = `01${randomBytes(8).toString('hex')}`
  cert.validity.notBefore = new Date(Date.now() - 3_600_000)
  cert.validity.notAfter = new Date(Date.now() + 10 * 365 * 86_400_000)
  const name = [{ name: 'commonName', value: commonName }]
  cert.setSubject(name)
  cert.setIssuer(name)
  cert.sign(forge.pki.privateKeyFromPem(privatePem), forge.md.sha256.create())
  return { privateKey: privatePem, cert: forge.pki.certificateToPem(cert) }
}

/** The base64 body of a PEM certificate, as metadata and KeyInfo carry it. */
export function certBody(pem: string): string {
  return pem.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '')
}

export const SIGNATURE_ALGORITHMS = {
  sha256: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
  sha1: 'http://www.w3.org/2000/09/xmldsig#rsa-sha1',
} as const
export const DIGEST_ALGORITHMS = {
  sha256: 'http://www.w3.org/2001/04/xmlenc#sha256',
  sha1: 'http://www.w3.org/2000/09/xmldsig#sha1',
} as const

export interface SignOptions {
  key: SigningKey
  /** The local name of the element whose ID is signed: `Assertion` or `Response`. */
  element: 'Assertion' | 'Response'
  algorithm?: keyof typeof SIGNATURE_ALGORITHMS
}

/** Signs the element (enveloped signature right after its Issuer, as SAML core §5.4.1 asks). */
export function signElement(
  xml: string,
  { key, element, algorithm = 'sha256' }: SignOptions,
): string {
  const signer = new SignedXml({
    privateKey: key.privateKey,
    publicCert: key.cert,
    signatureAlgorithm: SIGNATURE_ALGORITHMS[algorithm],
    canonicalizationAlgorithm: 'http://www.w3.org/2001/10/xml-exc-c14n#',
  })
  const path = `//*[local-name(.)='${element}']`
  signer.addReference({
    xpath: path,
    transforms: [
      'http://www.w3.org/2000/09/xmldsig#enveloped-signature',
      'http://www.w3.org/2001/10/xml-exc-c14n#',
    ],
    digestAlgorithm: DIGEST_ALGORITHMS[algorithm],
  })
  signer.computeSignature(xml, {
    prefix: 'ds',
    location: { reference: `${path}/*[local-name(.)='Issuer']`, action: 'after' },
  })
  return signer.getSignedXml()
}

export interface ResponseParts {
  idpEntityId: string
  /** Response Destination and SubjectConfirmationData Recipient (null: left out). */
  destination: string | null
  recipient: string
  audience: string
  inResponseTo: string | null
  nameId: string
  attributes: readonly (readonly [name: string, friendlyName: string, values: readonly string[]])[]
  /** Epoch ms. */
  now: number
  /** How long the assertion is valid, ms. */
  lifetimeMs: number
  assertionId?: string
  /** A failed Response: the second-level status (RequestDenied, AuthnFailed); no assertion. */
  deniedStatus?: string
}

const XML_ID = () => `_${randomBytes(20).toString('hex')}`
const at = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')

/** An unsigned Response with one assertion (or none, with a failed status). */
export function responseXml(parts: ResponseParts): string {
  const issued = at(parts.now)
  const until = at(parts.now + parts.lifetimeMs)
  const inResponseTo =
    parts.inResponseTo === null ? '' : ` InResponseTo="${escapeHtml(parts.inResponseTo)}"`
  const destination =
    parts.destination === null ? '' : ` Destination="${escapeHtml(parts.destination)}"`
  const issuer = `<saml:Issuer>${escapeHtml(parts.idpEntityId)}</saml:Issuer>`
  const status =
    parts.deniedStatus === undefined
      ? '<samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>'
      : `<samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Responder"><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:${parts.deniedStatus}"/></samlp:StatusCode></samlp:Status>`
  const attributes = parts.attributes
    .map(
      ([name, friendly, values]) =>
        `<saml:Attribute Name="${escapeHtml(name)}" FriendlyName="${escapeHtml(friendly)}" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:uri">${values
          .map((value) => `<saml:AttributeValue>${escapeHtml(value)}</saml:AttributeValue>`)
          .join('')}</saml:Attribute>`,
    )
    .join('')
  const assertion =
    parts.deniedStatus !== undefined
      ? ''
      : `<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${parts.assertionId ?? XML_ID()}" Version="2.0" IssueInstant="${issued}">${issuer}<saml:Subject><saml:NameID Format="urn:oasis:names:tc:SAML:2.0:nameid-format:persistent" NameQualifier="${escapeHtml(parts.idpEntityId)}" SPNameQualifier="${escapeHtml(parts.audience)}">${escapeHtml(parts.nameId)}</saml:NameID><saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData NotOnOrAfter="${until}" Recipient="${escapeHtml(parts.recipient)}"${inResponseTo}/></saml:SubjectConfirmation></saml:Subject><saml:Conditions NotBefore="${at(parts.now - 5000)}" NotOnOrAfter="${until}"><saml:AudienceRestriction><saml:Audience>${escapeHtml(parts.audience)}</saml:Audience></saml:AudienceRestriction></saml:Conditions><saml:AuthnStatement AuthnInstant="${issued}" SessionIndex="${XML_ID()}"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>${attributes === '' ? '' : `<saml:AttributeStatement>${attributes}</saml:AttributeStatement>`}</saml:Assertion>`
  return `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${XML_ID()}" Version="2.0" IssueInstant="${issued}"${destination}${inResponseTo}>${issuer}${status}${assertion}</samlp:Response>`
}

/** The IdP's usual answer: the assertion signed, then the Response around it. */
export function signedResponse(parts: ResponseParts, key: SigningKey): string {
  const xml = responseXml(parts)
  const assertionSigned =
    parts.deniedStatus === undefined ? signElement(xml, { key, element: 'Assertion' }) : xml
  return signElement(assertionSigned, { key, element: 'Response' })
}
