import type { Config } from '../config.js'
import type { UniversityClient } from './client.js'
import type { OidcClient } from './oidc-client.js'
import { createOidcProtocol } from './oidc-protocol.js'
import type { UniversityProtocol, UniversityProtocolId } from './protocol.js'
import { createUclApiProtocol } from './uclapi-protocol.js'

/** What any protocol may be built from; each takes the parts it speaks with. */
export interface ProtocolParts {
  config: Config['university']
  /** The UCL-API token exchange and user data. */
  client: UniversityClient
  /** The issuer's relying party for tier 2, when UNIVERSITY_PROTOCOL=oidc. */
  oidc: OidcClient | null
}

/**
 * Every university protocol, by the id UNIVERSITY_PROTOCOL names: the one place that knows them
 * all (docs/university-providers.md, "Protocols"). A new protocol is one module and one line here.
 */
const PROTOCOLS: Record<UniversityProtocolId, (parts: ProtocolParts) => UniversityProtocol> = {
  uclapi: ({ config, client }) => createUclApiProtocol({ client, ...config }),
  oidc: ({ oidc }) => {
    if (oidc === null) throw new Error('UNIVERSITY_PROTOCOL=oidc without an issuer')
    return createOidcProtocol(oidc)
  },
}

/** The protocol the configuration names. */
export function createProtocol(parts: ProtocolParts): UniversityProtocol {
  return PROTOCOLS[parts.config.protocol](parts)
}
