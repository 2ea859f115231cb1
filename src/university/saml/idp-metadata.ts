import { X509Certificate } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import type { Clock } from '../../clock.js'
import { ProviderUnavailableError } from '../oidc-client.js'
import { fetchText, ProviderFetchError } from '../provider-fetch.js'
import { childElements, parseXml, textOnly, XmlRefused } from '../xml.js'

// docs/university-providers.md, "SAML": the IdP's metadata (UNIVERSITY_SAML_IDP_METADATA, a URL
// or a file) gives its entity id, its signing certificates and its SSO endpoint for the
// HTTP-Redirect binding. It is read at first use and again once a day; a failed re-read keeps
// what was read before.

export const MD_NAMESPACE = 'urn:oasis:names:tc:SAML:2.0:metadata'
const DS_NAMESPACE = 'http://www.w3.org/2000/09/xmldsig#'
const REDIRECT_BINDING = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect'
const SAML2_PROTOCOL = 'urn:oasis:names:tc:SAML:2.0:protocol'
/** Re-read daily, as federations publish new certificates ahead of a rollover. */
export const METADATA_MAX_AGE_MS = 86_400_000
/** After a failed re-read, what was read before serves this long before the next try. */
export const METADATA_RETRY_MS = 3_600_000
/** One IdP's metadata is a few kilobytes; a federation aggregate is not what this variable takes. */
const MAX_METADATA_BYTES = 1024 * 1024

export interface IdpMetadata {
  entityId: string
  /** The certificates of the IdP's signing keys, PEM. */
  signingCerts: string[]
  /** The SingleSignOnService location of the HTTP-Redirect binding. */
  ssoRedirectUrl: string
}

function pemOf(base64: string): string {
  const body = base64.replace(/\s+/g, '')
  const lines = body.match(/.{1,64}/g) ?? []
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`
}

/** Reads one IdP's `EntityDescriptor`; throws `XmlRefused` with what is missing. */
export function parseIdpMetadata(xml: string): IdpMetadata {
  const root = parseXml(xml, 'the IdP metadata').documentElement!
  if (root.namespaceURI !== MD_NAMESPACE || root.localName !== 'EntityDescriptor') {
    throw new XmlRefused('the IdP metadata is not one md:EntityDescriptor')
  }
  const entityId = root.getAttribute('entityID') ?? ''
  if (entityId === '') throw new XmlRefused('the IdP metadata has no entityID')
  const idps = childElements(root, MD_NAMESPACE, 'IDPSSODescriptor').filter((idp) =>
    (idp.getAttribute('protocolSupportEnumeration') ?? '').split(/\s+/).includes(SAML2_PROTOCOL),
  )
  if (idps.length !== 1) throw new XmlRefused('the IdP metadata has no SAML 2.0 IDPSSODescriptor')
  const idp = idps[0]
  const signingCerts: string[] = []
  for (const descriptor of childElements(idp, MD_NAMESPACE, 'KeyDescriptor')) {
    const use = descriptor.getAttribute('use')
    if (use !== null && use !== '' && use !== 'signing') continue
    for (const keyInfo of childElements(descriptor, DS_NAMESPACE, 'KeyInfo')) {
      for (const data of childElements(keyInfo, DS_NAMESPACE, 'X509Data')) {
        for (const cert of childElements(data, DS_NAMESPACE, 'X509Certificate')) {
          const pem = pemOf(textOnly(cert, 'ds:X509Certificate'))
          try {
            new X509Certificate(pem)
          } catch {
            throw new XmlRefused('the IdP metadata holds a signing certificate that does not parse')
          }
          signingCerts.push(pem)
        }
      }
    }
  }
  if (signingCerts.length === 0) throw new XmlRefused('the IdP metadata has no signing certificate')
  const sso = childElements(idp, MD_NAMESPACE, 'SingleSignOnService').find(
    (service) => service.getAttribute('Binding') === REDIRECT_BINDING,
  )
  const ssoRedirectUrl = sso?.getAttribute('Location') ?? ''
  if (!/^https?:\/\//i.test(ssoRedirectUrl)) {
    throw new XmlRefused(
      'the IdP metadata has no SingleSignOnService for the HTTP-Redirect binding',
    )
  }
  return { entityId, signingCerts, ssoRedirectUrl }
}

export interface IdpMetadataSource {
  /** The metadata, read again when a day old; throws ProviderUnavailableError when never read. */
  current(): Promise<IdpMetadata>
}

export interface IdpMetadataOptions {
  /** An http(s) URL or a file's path. */
  source: string
  clock: Clock
  timeoutMs: number
  fetch?: typeof fetch
}

/** Why reading the metadata failed, for the log: the fetch's or the parse's reason. */
async function readMetadata(options: IdpMetadataOptions): Promise<IdpMetadata> {
  let text: string
  if (/^https?:/i.test(options.source)) {
    const answer = await fetchText(options.source, {
      timeoutMs: options.timeoutMs,
      maxBytes: MAX_METADATA_BYTES,
      accept: 'application/samlmetadata+xml, application/xml, text/xml',
      ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
    })
    if (answer.status !== 200) throw new ProviderFetchError(`HTTP ${answer.status}`)
    text = answer.text
  } else {
    text = await readFile(options.source, 'utf8')
  }
  return parseIdpMetadata(text)
}

export function createIdpMetadataSource(options: IdpMetadataOptions): IdpMetadataSource {
  let held: { metadata: IdpMetadata; atMs: number } | null = null
  let pending: Promise<IdpMetadata> | null = null
  return {
    current() {
      const now = options.clock.now().getTime()
      if (held !== null && now - held.atMs < METADATA_MAX_AGE_MS) {
        return Promise.resolve(held.metadata)
      }
      pending ??= readMetadata(options)
        .then((metadata) => {
          held = { metadata, atMs: options.clock.now().getTime() }
          return metadata
        })
        .catch((error: unknown) => {
          // What was read before serves on, and the next try is an hour later; never read:
          // unavailable, and the next request tries again.
          if (held !== null) {
            const retryAt = options.clock.now().getTime() + METADATA_RETRY_MS
            held = { metadata: held.metadata, atMs: retryAt - METADATA_MAX_AGE_MS }
            return held.metadata
          }
          throw new ProviderUnavailableError({ cause: error })
        })
        .finally(() => {
          pending = null
        })
      return pending
    },
  }
}

/** The line for a metadata that could not be read. */
export function metadataFailure(error: unknown): string {
  const cause = error instanceof ProviderUnavailableError ? error.cause : error
  if (cause instanceof ProviderFetchError || cause instanceof XmlRefused) {
    return `IdP metadata unavailable: ${cause.message}`
  }
  const code = (cause as NodeJS.ErrnoException | undefined)?.code
  return `IdP metadata unavailable: ${typeof code === 'string' ? code : String(cause).slice(0, 120)}`
}
