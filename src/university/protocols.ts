import type { Clock } from '../clock.js'
import type { Config } from '../config.js'
import type { Queryable } from '../db/schema.js'
import { createCasProtocol } from './cas/cas-protocol.js'
import type { UniversityClient } from './client.js'
import type { OidcClient } from './oidc-client.js'
import { createOidcProtocol } from './oidc-protocol.js'
import type { UniversityProtocol, UniversityProtocolId } from './protocol.js'
import { createAssertionStore } from './saml/assertion-store.js'
import { createSamlProtocol, type SamlProtocol } from './saml/saml-protocol.js'
import { createUclApiProtocol } from './uclapi-protocol.js'

/** What any protocol may be built from; each takes the parts it speaks with. */
export interface ProtocolParts {
  config: Config['university']
  publicBaseUrl: string
  /** The UCL-API token exchange and user data. */
  client: UniversityClient
  /** The issuer's relying party for tier 2, when UNIVERSITY_PROTOCOL=oidc. */
  oidc: OidcClient | null
  /** Where SAML keeps the ids of the assertions it accepted (its replay cache). */
  db: Queryable
  clock: Clock
  fetch?: typeof fetch
}

/** A configuration the reader lets through always has what its protocol needs. */
function required<T>(value: T | null, what: string): T {
  if (value === null) throw new Error(`UNIVERSITY_PROTOCOL needs ${what}`)
  return value
}

/**
 * Every university protocol, by the id UNIVERSITY_PROTOCOL names: the one place that knows them
 * all (docs/university-providers.md, "Protocols"). A new protocol is one module and one line here.
 */
const PROTOCOLS: Record<UniversityProtocolId, (parts: ProtocolParts) => UniversityProtocol> = {
  uclapi: ({ config, client }) => createUclApiProtocol({ client, ...config }),
  oidc: ({ oidc }) => createOidcProtocol(required(oidc, 'an issuer')),
  cas: ({ config, publicBaseUrl, fetch }) => {
    const cas = required(config.cas, 'UNIVERSITY_CAS_URL')
    return createCasProtocol({
      casUrl: cas.url,
      version: cas.version,
      publicBaseUrl,
      clientId: config.clientId,
      attributes: required(config.attributes, 'UNIVERSITY_ATTRIBUTES'),
      timeoutMs: config.timeoutMs,
      ...(fetch === undefined ? {} : { fetch }),
    })
  },
  saml: ({ config, publicBaseUrl, db, clock, fetch }) =>
    createSamlProtocol({
      ...required(config.saml, 'UNIVERSITY_SAML_IDP_METADATA'),
      publicBaseUrl,
      clientId: config.clientId,
      attributes: required(config.attributes, 'UNIVERSITY_ATTRIBUTES'),
      assertions: createAssertionStore(db),
      clock,
      timeoutMs: config.timeoutMs,
      ...(fetch === undefined ? {} : { fetch }),
    }),
}

/** The protocol the configuration names. */
export function createProtocol(parts: ProtocolParts): UniversityProtocol {
  return PROTOCOLS[parts.config.protocol](parts)
}

/** The SAML service provider, when that is the protocol: its metadata is served. */
export function samlOf(protocol: UniversityProtocol): SamlProtocol | null {
  return protocol.id === 'saml' ? (protocol as SamlProtocol) : null
}
