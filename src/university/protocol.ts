// The university side of the provider seam (docs/university-providers.md): each protocol (the
// UCL-API round trip, OpenID Connect, CAS, SAML) implements `UniversityProtocol`, and the callback
// runs the steps they share around it.

import type { UniversityIdentity } from './oidc-client.js'

export type UniversityProtocolId = 'uclapi' | 'oidc' | 'cas' | 'saml'

/** What an attempt gives the protocol. */
export interface AttemptStart {
  /** The user's messenger openId: the seed's `state`. */
  state: string
  /**
   * The attempt cookie in clear (256-bit, random, only its hash is stored). Per-attempt values are
   * derived from it, so nothing more is stored: OIDC's PKCE verifier and nonce, and SAML's
   * AuthnRequest ID (checked against the Response's InResponseTo).
   */
  cookie: string
}

/** A callback as the route read it: the GET's query or the POST's form fields. */
export interface CallbackRequest {
  method: 'GET' | 'POST'
  params: Readonly<Record<string, string | undefined>>
  /** The attempt cookie the browser brought, if any. */
  attemptCookie: string | null
  /** The caller's address (after TRUST_PROXY). */
  ip: string
}

/** What a callback says before any attempt is read. */
export type CallbackReading =
  /** Refused before anything is read or changed: the reason goes to the log and the audit. */
  | { kind: 'refuse'; reason: string }
  | {
      kind: 'answer'
      /** The openId whose attempt this answers (OIDC/UCL `state`, CAS `state`, SAML `RelayState`). */
      state: string
      /** The provider's "no": the attempt ends denied (`denied: true`) or failed, with this reason. */
      denial: null | { denied: boolean; reason?: string }
    }

/** The proof checked, once the attempt is claimed (redirected → exchanging). */
export type Completion =
  | { kind: 'linked'; token: string | null; identity: UniversityIdentity | null }
  | { kind: 'denied'; reason?: string }
  | { kind: 'failed'; reason: string }

export interface UniversityProtocol {
  readonly id: UniversityProtocolId
  /** GET /authorize/university's 301 Location for this attempt (the seed's client_id and state included). */
  authorizeUrl(attempt: AttemptStart): Promise<string>
  /** Reads a callback: refusal, or which attempt it answers and whether it is a denial. */
  read(request: CallbackRequest): Promise<CallbackReading>
  /** Checks the proof (code exchange, ticket validation, signed assertion) for the claimed attempt. */
  complete(request: CallbackRequest, attempt: AttemptStart): Promise<Completion>
}
