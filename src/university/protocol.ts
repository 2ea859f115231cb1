import type { Config } from '../config.js'
import type { UniversityIdentity } from './oidc-client.js'

// The university side of the provider seam (docs/university-providers.md, "Protocols"): each
// protocol a university may speak is one module implementing `UniversityProtocol`, chosen once by
// UNIVERSITY_PROTOCOL in `protocols.ts`. The round trip around it — the emailed link, the attempt
// and its cookie, the always-200 callback, the claim of the attempt, the link through the unit of
// work — is the same for every protocol (service.ts, callback.ts).

export type UniversityProtocolId = Config['university']['protocol']

/** What an attempt gives the protocol: who it is for, and the secret only its browser holds. */
export interface AttemptStart {
  /** The user's messenger openId: the seed's `state`. */
  state: string
  /**
   * The attempt cookie in clear (256 random bits; the database keeps only its hash). A protocol
   * derives its per-attempt values from it (OpenID Connect's PKCE verifier and nonce), so nothing
   * that completes a round trip is stored.
   */
  cookie: string
}

/** A callback as the route read it: the GET's query, or the POST's form fields. */
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
  /** Refused before anything is read or changed; the reason goes to the log and the audit trail. */
  | { kind: 'refuse'; reason: string }
  | {
      kind: 'answer'
      /** The openId whose attempt the callback answers. */
      state: string
      /**
       * How the attempt is found: by the cookie's hash, or (UNIVERSITY_CALLBACK_BINDING=none, a
       * provider calling back server to server from an allowed address) by `state` alone.
       */
      cookie: string | null
      /** The provider's "no": the attempt ends denied (the user declined) or failed, with why. */
      denial: null | { denied: boolean; reason?: string }
    }

/** The proof checked, once the attempt is claimed: a link, or why not. */
export type Completion =
  | {
      kind: 'linked'
      /** The provider's token for calls on the member's behalf; stored encrypted. */
      token: string | null
      /** Who the member is; null when the provider named nobody (UCL-API without user data). */
      identity: UniversityIdentity | null
    }
  | { kind: 'denied'; reason?: string }
  | { kind: 'failed'; reason: string }

export interface UniversityProtocol {
  readonly id: UniversityProtocolId
  /**
   * Where GET /authorize/university sends the browser (its 301), the seed's `client_id` and
   * `state` included. Throws `ProviderUnavailableError` when the provider cannot be reached.
   */
  authorizeUrl(attempt: AttemptStart): Promise<string>
  /** Reads a callback: refused, or which attempt it answers and whether it is a denial. */
  read(request: CallbackRequest): Promise<CallbackReading>
  /**
   * Checks the callback's proof for the attempt `read` named, once it is claimed; never throws for
   * a bad proof.
   */
  complete(
    request: CallbackRequest,
    answer: { state: string; cookie: string | null },
  ): Promise<Completion>
}
