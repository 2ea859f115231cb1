import { createHmac } from 'node:crypto'
import { promisify } from 'node:util'
import { generateServiceProviderMetadata, SAML, ValidateInResponseTo } from '@node-saml/node-saml'
import { XMLSerializer } from '@xmldom/xmldom'
import xmlenc from 'xml-encryption'
import type { Clock } from '../../clock.js'
import type { UniversityAttributes } from '../../config.js'
import { MAX_SECRET_LENGTH } from '../../lib/secrets.js'
import { identityFrom, PERSISTENT_NAME_ID } from '../attributes.js'
import type {
  AttemptStart,
  CallbackReading,
  CallbackRequest,
  Completion,
  UniversityProtocol,
} from '../protocol.js'
import { parseXml, XmlRefused } from '../xml.js'
import type { AssertionStore } from './assertion-store.js'
import { createIdpMetadataSource, metadataFailure, type IdpMetadata } from './idp-metadata.js'
import {
  checkAlgorithms,
  checkAssertion,
  checkDocument,
  PERSISTENT,
  responseOf,
  SAML as SAML_NS,
  statusOf,
} from './response-checks.js'
import { aliasesOf } from './attribute-names.js'

/** docs/university-providers.md, "SAML": clocks may differ by a minute. */
export const CLOCK_SKEW_MS = 60_000
/** A federation's signed Response is often over 16 KiB; its base64 is bounded by the body limit. */
export const MAX_SAML_RESPONSE_CHARS = 256 * 1024
const CALLBACK_PATH = '/authorize/university/callback'
const STATUS_PREFIX = 'urn:oasis:names:tc:SAML:2.0:status:'
/** The second-level status codes that mean the member declined or could not sign in. */
const DENIED_STATUSES = new Set(['AuthnFailed', 'RequestDenied'])
const MAX_REASON = 300

export interface SamlProtocolOptions {
  /** UNIVERSITY_SAML_IDP_METADATA: a URL or a file. */
  idpMetadata: string
  spEntityId: string
  /** PEM; signs AuthnRequests and decrypts encrypted assertions. */
  spKey: string | null
  spCert: string | null
  publicBaseUrl: string
  /** The seed's `client_id`, carried on the 301. */
  clientId: string
  attributes: UniversityAttributes
  /** Where accepted assertion ids are kept until they expire (across instances). */
  assertions: AssertionStore
  clock: Clock
  timeoutMs: number
  fetch?: typeof fetch
}

export interface SamlProtocol extends UniversityProtocol {
  /** The SP metadata served at GET /authorize/university/saml. */
  spMetadata(): string
}

/**
 * The AuthnRequest ID of an attempt, derived from its cookie (which only the browser holds, the
 * database has its hash): the Response's InResponseTo is checked against it, and nothing is
 * stored. An XML ID must start with a letter or `_`.
 */
export function requestIdOf(attemptCookie: string): string {
  return `_${createHmac('sha256', attemptCookie).update('campusgate-saml-authn-request').digest('hex')}`
}

function bounded(reason: string): string {
  // eslint-disable-next-line no-control-regex -- control characters would forge log lines
  const flat = reason.replace(/[\u0000-\u001f\u007f]+/g, ' ')
  return flat.length > MAX_REASON ? `${flat.slice(0, MAX_REASON)}…` : flat
}

/** The posted Response, decoded; null when it is not base64 of a bounded size. */
function decodeResponse(value: string | undefined): string | null {
  if (value === undefined || value === '' || value.length > MAX_SAML_RESPONSE_CHARS) return null
  const compact = value.replace(/[\r\n ]+/g, '')
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(compact)) return null
  return Buffer.from(compact, 'base64').toString('utf8')
}

/**
 * SAML 2.0 Web Browser SSO as a service provider, SP-initiated: AuthnRequests by HTTP-Redirect,
 * Responses by HTTP-POST to the callback, verified by node-saml against the IdP metadata's keys
 * and then checked for what node-saml leaves out (response-checks.ts). An assertion is accepted
 * once (AssertionStore).
 */
export function createSamlProtocol(options: SamlProtocolOptions): SamlProtocol {
  const callbackUrl = `${options.publicBaseUrl}${CALLBACK_PATH}`
  const metadata = createIdpMetadataSource({
    source: options.idpMetadata,
    clock: options.clock,
    timeoutMs: options.timeoutMs,
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  })
  const decrypt = promisify(xmlenc.decrypt.bind(xmlenc))

  /** node-saml for one attempt: its request ID, and a cache that knows only that ID. */
  function samlFor(idp: IdpMetadata, requestId: string): SAML {
    return new SAML({
      callbackUrl,
      entryPoint: idp.ssoRedirectUrl,
      issuer: options.spEntityId,
      audience: options.spEntityId,
      idpCert: idp.signingCerts,
      idpIssuer: idp.entityId,
      // The assertion is signed, or the Response around it is: either satisfies the rule.
      wantAssertionsSigned: false,
      wantAuthnResponseSigned: false,
      acceptedClockSkewMs: CLOCK_SKEW_MS,
      validateInResponseTo: ValidateInResponseTo.always,
      requestIdExpirationPeriodMs: 86_400_000,
      generateUniqueId: () => requestId,
      cacheProvider: {
        saveAsync: async (_key, value) => ({ value, createdAt: Date.now() }),
        // node-saml ages a request from this time against requestIdExpirationPeriodMs; the
        // attempt's own expiry is what bounds it (the callback finds no attempt after).
        getAsync: async (key) => (key === requestId ? new Date().toISOString() : null),
        removeAsync: async () => null,
      },
      identifierFormat: null,
      disableRequestedAuthnContext: true,
      signatureAlgorithm: 'sha256',
      digestAlgorithm: 'sha256',
      ...(options.spKey === null
        ? {}
        : { privateKey: options.spKey, decryptionPvk: options.spKey }),
    })
  }

  /** The assertion inside an EncryptedAssertion, for the algorithm check node-saml does not make. */
  async function checkEncryptedAssertion(response: ReturnType<typeof responseOf>): Promise<void> {
    const encrypted = response.getElementsByTagNameNS(SAML_NS, 'EncryptedAssertion')[0]
    if (encrypted === undefined || options.spKey === null) return
    const xml = await decrypt(new XMLSerializer().serializeToString(encrypted), {
      key: options.spKey,
      disallowDecryptionWithInsecureAlgorithm: true,
      warnInsecureAlgorithm: false,
    })
    const inner = parseXml(xml, 'the decrypted assertion').documentElement!
    checkAlgorithms(inner)
  }

  async function idpOrFailure(): Promise<IdpMetadata | string> {
    try {
      return await metadata.current()
    } catch (error) {
      return metadataFailure(error)
    }
  }

  return {
    id: 'saml',

    spMetadata() {
      return generateServiceProviderMetadata({
        issuer: options.spEntityId,
        callbackUrl,
        identifierFormat: PERSISTENT,
        wantAssertionsSigned: true,
        ...(options.spCert === null || options.spKey === null
          ? {}
          : {
              publicCerts: options.spCert,
              decryptionCert: options.spCert,
              privateKey: options.spKey,
              decryptionPvk: options.spKey,
              signatureAlgorithm: 'sha256',
              digestAlgorithm: 'sha256',
            }),
      })
    },

    async authorizeUrl(attempt: AttemptStart): Promise<string> {
      // Throws ProviderUnavailableError while the metadata has never been read.
      const idp = await metadata.current()
      const saml = samlFor(idp, requestIdOf(attempt.cookie))
      return saml.getAuthorizeUrlAsync(attempt.state, undefined, {
        // The seed's two parameters, beside the binding's own (which alone are signed).
        additionalParams: { client_id: options.clientId, state: attempt.state },
      })
    },

    async read(request: CallbackRequest): Promise<CallbackReading> {
      if (request.method !== 'POST') return { kind: 'refuse', reason: 'a SAML callback is a POST' }
      const state = request.params.RelayState
      if (state === undefined || state === '' || state.length > MAX_SECRET_LENGTH) {
        return { kind: 'refuse', reason: 'RelayState missing or malformed' }
      }
      const xml = decodeResponse(request.params.SAMLResponse)
      if (xml === null) return { kind: 'refuse', reason: 'SAMLResponse missing or malformed' }
      if (request.attemptCookie === null) return { kind: 'refuse', reason: 'no attempt cookie' }
      let response
      try {
        response = responseOf(parseXml(xml, 'the SAMLResponse'))
      } catch (error) {
        if (error instanceof XmlRefused) return { kind: 'refuse', reason: error.message }
        throw error
      }
      // Even a denial answers this attempt's request: a Response for another request (or none,
      // an IdP-initiated one) changes nothing.
      const inResponseTo = response.getAttribute('InResponseTo') ?? ''
      if (inResponseTo === '')
        return { kind: 'refuse', reason: 'unsolicited Response (no InResponseTo)' }
      if (inResponseTo !== requestIdOf(request.attemptCookie)) {
        return { kind: 'refuse', reason: "InResponseTo is not this attempt's request" }
      }
      const cookie = request.attemptCookie
      const status = statusOf(response)
      if (status.success) return { kind: 'answer', state, cookie, denial: null }
      const codes = status.codes.map((code) => code.replace(STATUS_PREFIX, '')).join('/')
      return {
        kind: 'answer',
        state,
        cookie,
        denial: {
          denied: status.codes
            .slice(1)
            .some((code) => DENIED_STATUSES.has(code.replace(STATUS_PREFIX, ''))),
          reason: bounded(`the IdP answered status ${codes || 'none'}`),
        },
      }
    },

    async complete(
      request: CallbackRequest,
      attempt: { state: string; cookie: string | null },
    ): Promise<Completion> {
      const failed = (reason: string): Completion => ({
        kind: 'failed',
        reason: bounded(`SAML Response refused: ${reason}`),
      })
      const idp = await idpOrFailure()
      if (typeof idp === 'string') return { kind: 'failed', reason: idp }
      const encoded = request.params.SAMLResponse
      const xml = decodeResponse(encoded)
      if (xml === null || encoded === undefined) return failed('SAMLResponse missing or malformed')
      if (attempt.cookie === null) return failed('no attempt cookie')
      const requestId = requestIdOf(attempt.cookie)
      let verified
      try {
        const response = responseOf(parseXml(xml, 'the SAMLResponse'))
        checkDocument(response, { callbackUrl, decrypting: options.spKey !== null })
        await checkEncryptedAssertion(response)
        const status = statusOf(response)
        if (!status.success) return failed(`status ${status.codes.join('/')}`)
        if (response.getAttribute('InResponseTo') !== requestId) {
          return failed("InResponseTo is not this attempt's request")
        }
        const { profile } = await samlFor(idp, requestId).validatePostResponseAsync({
          SAMLResponse: encoded.replace(/[\r\n ]+/g, ''),
        })
        const assertionXml = profile?.getAssertionXml?.()
        if (assertionXml === undefined) return failed('no signed assertion')
        verified = checkAssertion(parseXml(assertionXml, 'the signed assertion'), {
          issuer: idp.entityId,
          audience: options.spEntityId,
          recipient: callbackUrl,
          requestId,
          nowMs: options.clock.now().getTime(),
          skewMs: CLOCK_SKEW_MS,
        })
      } catch (error) {
        // node-saml's and xml-crypto's reasons name what failed, never a key or a value.
        return failed(error instanceof Error ? error.message : String(error))
      }
      const now = options.clock.now().getTime()
      const fresh = await options.assertions.firstUse(
        verified.issuer,
        verified.id,
        verified.notOnOrAfter + CLOCK_SKEW_MS,
        now,
      )
      if (!fresh) return failed('assertion replayed (its ID was accepted before)')
      const released = new Map(verified.attributes)
      if (verified.nameId !== null && verified.nameId.format === PERSISTENT) {
        released.set(PERSISTENT_NAME_ID, [verified.nameId.value])
      }
      const mapped = identityFrom(idp.entityId, released, options.attributes, aliasesOf)
      if (mapped.identity === null) return failed(mapped.missing ?? 'no subject')
      return { kind: 'linked', token: null, identity: mapped.identity }
    },
  }
}
