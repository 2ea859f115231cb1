import type { Generated, Kysely, Selectable } from 'kysely'

// Times are epoch milliseconds (bigint on PostgreSQL, read back as numbers by createDb).

/** A person (docs/identities.md): the ways providers know them are their `identities`. */
export interface UserTable {
  id: string
  created_at: number
  updated_at: number
  /** When an operator suspended the person (docs/console.md, "Suspending a user"); null while not. */
  suspended_at: number | null
  /** The operator's reason for the suspension, when they gave one. */
  suspension_reason: string | null
}

/** `messenger`: a platform's app knows the person by an openId; `university`: the link tier 2 proved. */
export type IdentityKind = 'messenger' | 'university'

/**
 * One way a provider knows a person (docs/identities.md): a messenger identity is (platform,
 * appId, openId), a university identity (protocol, issuer, subject), at most one per person.
 */
export interface IdentityTable {
  id: string
  user_id: string
  kind: IdentityKind
  /** The messenger platform (`wechat`, `qq`, `douyin`) or the university protocol ('' unrecorded). */
  provider: string
  /** The appId, or the issuer or server that vouches ('' when not known). */
  realm: string
  /** The openId; the university subject (null when the provider named nobody). */
  subject: string | null
  /** The platform's unionid, the same across the apps of one open-platform account. */
  union_id: string | null
  /** Encrypted: the platform's session key, or the university's token; null once nullified. */
  secret: string | null
  email: string | null
  name: string | null
  /** 1 student, 0 not, null unknown. */
  is_student: number | null
  /** University: when the link was made; non-null while it holds (tier 2). */
  linked_at: number | null
  /** Under exclusive binding, while linked: SHA-256 of issuer and subject, unique. */
  binding: string | null
  created_at: number
  updated_at: number
}

export interface SessionTable {
  id: string
  user_id: string
  /** The messenger identity the key was registered with: its openId is the one the key answers with. */
  identity_id: string | null
  /** SHA-256 of the session key; the key itself is never stored. */
  key_hash: string
  created_at: number
  expires_at: number
  /** When `expires_at` was last written, to bound write-backs to one per touch interval. */
  touched_at: number
  /**
   * No expiry before this: at most `expires_at`, written with it when the session is installed and
   * raised by the pruner, never by a touch. The pruner's index; `expires_at` has none, so a touch
   * writes no indexed column (migration 0012). The default 0 is a floor of any expiry.
   */
  expiry_floor: Generated<number>
  /** The `User-Agent` of the registering request, at most 256 characters (docs/sessions.md). */
  device: string | null
}

/** docs/console.md, "What each page shows": the user used its key on `day` ('YYYY-MM-DD', UTC). */
export interface UserActiveDayTable {
  user_id: string
  day: string
}

export interface RegistrationCodeTable {
  id: string
  user_id: string
  code_hash: string
  created_at: number
  expires_at: number
}

/** `taken`: the identity is already linked to another messenger user (exclusive binding). */
export type AttemptStatus =
  'redirected' | 'exchanging' | 'denied' | 'failed' | 'completed' | 'ended' | 'taken'

export interface UniversityAttemptTable {
  id: string
  user_id: string
  code_id: string
  cookie_hash: string
  status: AttemptStatus
  created_at: number
  expires_at: number
  finished_at: number | null
}

export interface MailOutboxTable {
  id: string
  recipient: string
  subject: string
  /** Encrypted; they carry a live link and are wiped once the mail is sent or abandoned. */
  text_body: string | null
  html_body: string | null
  created_at: number
  /** After this the mail is useless (its link has expired) and is abandoned. */
  expires_at: number
  next_attempt_at: number
  attempts: number
  locked_until: number | null
  sent_at: number | null
  abandoned_at: number | null
  last_error: string | null
  /** Whose mail this is: erasing the user deletes it. */
  user_id: string | null
  /** The registration code a confirmation mail carries; ending the code abandons the mail. */
  registration_code_id: string | null
}

export interface JobLeaseTable {
  name: string
  /** The instance that holds the lease. */
  holder: string
  expires_at: number
}

export interface AuditEventTable {
  id: string
  at: number
  type: string
  /** Who acted: `api` (a request), `cli:<os user>`, `system` (expiry, start-up) or `provider`. */
  actor: string
  /** Not a foreign key: the trail outlives an erased user until AUDIT_RETENTION. */
  user_id: string | null
  open_id: string | null
  /** The client address (after TRUST_PROXY) when a request caused it. */
  ip: string | null
  /** A small JSON object of non-secret facts (a refusal's reason). */
  detail: string | null
}

export interface WebhookEventTable {
  /** The `webhook-id` of every try to every endpoint. */
  id: string
  /** Not a foreign key: `user.erased` outlives the user. */
  user_id: string
  /** The user's events in the order their changes committed. */
  seq: number
  type: string
  /** The JSON body, exactly as every try sends it. */
  body: string
  created_at: number
}

export type WebhookDeliveryState = 'pending' | 'delivered' | 'dead'

/** One event addressed to one endpoint of WEBHOOK_URL. */
export interface WebhookDeliveryTable {
  id: string
  event_id: string
  endpoint: string
  /** The event's user and order, copied so the claim can keep each user's events in order. */
  user_id: string
  seq: number
  state: WebhookDeliveryState
  /** Tries made so far (claimed, whether or not they finished). */
  attempts: number
  next_attempt_at: number
  /**
   * After a failed try past this, the delivery is dead: WEBHOOK_RETRY_FOR from `first_tried_at`,
   * set by the first try (until then, provisional).
   */
  retry_until: number
  /** When the window of WEBHOOK_RETRY_FOR started: the first try; null before it. */
  first_tried_at: number | null
  /** While a try is in flight: other workers leave the row alone until then. */
  locked_until: number | null
  last_error: string | null
  finished_at: number | null
}

/** What an operator may do in the console: `admin` everything, `viewer` read only. */
export type OperatorRole = 'admin' | 'viewer'

/** A `campusgate console link`: single use, valid 10 minutes; only its hash is kept. */
export interface ConsoleSignInTokenTable {
  id: string
  token_hash: string
  /** Who the link is for (`--name`), named in the audit trail of what they do. */
  operator: string
  /** The role of the session it opens (`--role`). */
  role: Generated<OperatorRole>
  created_at: number
  expires_at: number
  used_at: number | null
}

/** A signed-in operator: the cookie's hash; 8 hours at most, 30 minutes idle. */
export interface ConsoleSessionTable {
  id: string
  token_hash: string
  operator: string
  role: Generated<OperatorRole>
  created_at: number
  last_seen_at: number
}

/** docs/university-providers.md, "SAML": accepted assertions, kept until they expire (one writer: university/saml/assertion-store.ts). */
export interface SamlAssertionTable {
  /** SHA-256 (hex) of the IdP's entity id and the assertion's ID. */
  id_hash: string
  expires_at: number
}

export interface Database {
  users: UserTable
  identities: IdentityTable
  sessions: SessionTable
  user_active_days: UserActiveDayTable
  registration_codes: RegistrationCodeTable
  university_attempts: UniversityAttemptTable
  mail_outbox: MailOutboxTable
  job_leases: JobLeaseTable
  audit_events: AuditEventTable
  webhook_events: WebhookEventTable
  webhook_deliveries: WebhookDeliveryTable
  console_sign_in_tokens: ConsoleSignInTokenTable
  console_sessions: ConsoleSessionTable
  saml_assertions: SamlAssertionTable
}

export type UserRow = Selectable<UserTable>
export type IdentityRow = Selectable<IdentityTable>
export type SessionRow = Selectable<SessionTable>
export type RegistrationCodeRow = Selectable<RegistrationCodeTable>
export type UniversityAttemptRow = Selectable<UniversityAttemptTable>
export type MailOutboxRow = Selectable<MailOutboxTable>
export type AuditEventRow = Selectable<AuditEventTable>
export type WebhookDeliveryRow = Selectable<WebhookDeliveryTable>

/** What a store function runs its SQL on: the database, or the caller's transaction. */
export type Queryable = Kysely<Database>
