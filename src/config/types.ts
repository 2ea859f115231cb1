// The configuration's shape: what `loadConfig` returns, frozen. Each section module fills its part.

/** Which simulated providers the server mounts under `/_sandbox/`. */
export interface SandboxConfig {
  readonly messenger: boolean
  readonly university: boolean
}

export type CallbackBinding = 'cookie' | 'none'
export type UniversityProtocol = 'uclapi' | 'oidc' | 'cas' | 'saml'
export type IdentityBinding = 'exclusive' | 'shared'
export type TokenAuthMethod = 'client_secret_basic' | 'client_secret_post'

/** UNIVERSITY_CAS_URL and UNIVERSITY_CAS_VERSION. */
export interface CasConfig {
  /** The CAS server's base, without a trailing slash (`…/login`, `…/p3/serviceValidate` follow it). */
  readonly url: string
  /** 3: `/p3/serviceValidate` with attributes; 2: `/serviceValidate`. */
  readonly version: 2 | 3
}

/** UNIVERSITY_SAML_IDP_METADATA, UNIVERSITY_SAML_SP_ENTITY_ID and the service provider's key. */
export interface SamlConfig {
  /** The IdP's metadata: an http(s) URL, or a file's absolute path. */
  readonly idpMetadata: string
  readonly spEntityId: string
  /** PEM: signs AuthnRequests and decrypts encrypted assertions; null: neither. */
  readonly spKey: string | null
  /** PEM: the certificate of `spKey`, published in the SP metadata. */
  readonly spCert: string | null
}

/**
 * docs/university-providers.md, "Attributes": the attribute names each identity field is read from,
 * tried in turn (the first one released wins).
 */
export interface UniversityAttributes {
  readonly subject: readonly string[]
  readonly email: readonly string[]
  readonly name: readonly string[]
  /** True when one of these attributes holds `value` (`student@…` counts); with no value, a boolean-like value. */
  readonly isStudent: { readonly names: readonly string[]; readonly value: string | null }
}

/** docs/decisions.md, "Rate limits": a maximum of 0 turns that limit off. */
export interface RateLimitConfig {
  /** Requests per window per client address (IPv6: per /64), across all routes. */
  readonly globalMax: number
  /** Requests per window per client address on registration and callback routes. */
  readonly sensitiveMax: number
  /** Requests per window per valid session key; such requests do not count against the address. */
  readonly perSessionMax: number
  /** Failed console sign-ins per window per client address (the console's own counter). */
  readonly consoleSignInMax: number
  readonly windowMs: number
}

/**
 * One section per concern, each read by its module of config/ (README, "Configuration", names
 * every variable).
 */
export interface Config {
  readonly server: ServerConfig
  readonly database: DatabaseConfig
  readonly mail: MailConfig
  readonly messenger: {
    /** Each messenger platform's API base URL, by platform id (docs/identities.md). */
    readonly apiBaseUrls: ReadonlyMap<string, string>
    /** MESSENGER_APP_PLATFORMS: the platform of each appId it lists; others are `wechat`. */
    readonly appPlatforms: ReadonlyMap<string, string>
    /** IDENTITY_LINK_BY_UNIONID: a new openId joins the person whose identity holds its unionid. */
    readonly linkByUnionId: boolean
    readonly allowedAppIds: readonly string[] | null
    /** MESSENGER_APP_SECRETS: appId → its AppSecret, kept on the server (never printed). */
    readonly appSecrets: ReadonlyMap<string, string>
    readonly timeoutMs: number
  }
  readonly university: {
    readonly authorizeUrl: string
    readonly tokenUrl: string
    readonly clientId: string
    readonly clientSecret: string
    readonly attemptTtlMs: number
    readonly callbackBinding: CallbackBinding
    readonly callbackAllowedIps: readonly string[]
    readonly timeoutMs: number
    readonly protocol: UniversityProtocol
    /** OIDC: the issuer to discover (the sandbox's own in OIDC sandbox mode). */
    readonly issuer: string | null
    readonly scopes: string
    /** OIDC: how the client authenticates at the token endpoint; null: chosen from discovery. */
    readonly tokenAuthMethod: TokenAuthMethod | null
    /** UCL-API: the user-data endpoint that names who signed in; without it no identity is recorded. */
    readonly userInfoUrl: string | null
    readonly identityBinding: IdentityBinding
    /** Lower-case domains a confirmation email may go to (subdomains match); null: any. */
    readonly emailDomains: readonly string[] | null
    /** A link older than this lapses to tier 1; null: never. */
    readonly linkMaxAgeMs: number | null
    /** CAS: the server (the sandbox's own in CAS sandbox mode); null with other protocols. */
    readonly cas: CasConfig | null
    /** SAML: the IdP's metadata and the service provider's own settings; null with other protocols. */
    readonly saml: SamlConfig | null
    /** CAS and SAML: which released attributes name the member (UNIVERSITY_ATTRIBUTES); else null. */
    readonly attributes: UniversityAttributes | null
  }
  readonly sandbox: SandboxConfig
  readonly sessions: SessionsConfig
  readonly operations: OperationsConfig
  readonly secrets: SecretsConfig
  readonly rateLimit: RateLimitConfig
  readonly webhook: WebhookConfig
  /** The service's own SQLite backups (BACKUP_DIR, BACKUP_INTERVAL, BACKUP_KEEP); null: off. */
  readonly backups: BackupConfig | null
  /**
   * The operator console: CONSOLE (`off` disables it) and CONSOLE_OPERATORS (subjects or emails,
   * each an admin unless it ends in `:viewer`).
   */
  readonly console: {
    readonly enabled: boolean
    readonly operators: readonly ConsoleOperator[]
  }
  /** The app's backends that may introspect keys (`POST /introspect`); see config/backends.ts. */
  readonly backends: BackendsConfig
}

/** PORT, HOST, PUBLIC_BASE_URL, TRUST_PROXY, REQUEST_TIMEOUT, SHUTDOWN_DELAY. */
export interface ServerConfig {
  readonly port: number
  readonly host: string
  readonly publicBaseUrl: string
  /** `false`, a hop count, or the proxies' addresses / CIDRs; never "trust everyone". */
  readonly trustProxy: false | number | string[]
  /**
   * The header the trusted proxies put the client address in, lower-case (`TRUST_PROXY=… via
   * NAME`); null: `x-forwarded-for`.
   */
  readonly clientAddressHeader: string | null
  /** How long a request (headers and body) may take to arrive. */
  readonly requestTimeoutMs: number
  /** After SIGTERM, how long the listener keeps serving while /readyz answers 503. */
  readonly shutdownDelayMs: number
}

/** DATABASE_URL, DATABASE_POOL_SIZE and REDIS_URL (the rate limits' shared counters). */
export interface DatabaseConfig {
  readonly url: string
  readonly poolSize: number
  readonly redisUrl: string | null
}

/** SMTP_URL, MAIL_FROM and the confirmation emails' caps. */
export interface MailConfig {
  readonly smtpUrl: string | null
  /** Where mails are written as .eml files while SMTP_URL is unset. */
  readonly outboxDir: string
  readonly from: string
  /** Confirmation emails per hour: per user and per recipient address (across users). */
  readonly limits: {
    readonly perUser: number
    readonly perRecipient: number
    readonly windowMs: number
  }
}

/** SESSION_TTL, SESSION_TOUCH_INTERVAL, SESSION_MAX_AGE, SESSIONS_PER_USER, REGISTRATION_CODE_TTL. */
export interface SessionsConfig {
  readonly ttlMs: number
  readonly touchIntervalMs: number
  /** SESSION_MAX_AGE: a session ends this long after its registration however it is used; null: never. */
  readonly maxAgeMs: number | null
  /** SESSIONS_PER_USER: live sessions a user may hold at once (one per device), at least 1. */
  readonly perUser: number
  /** How long an emailed confirmation link stays valid. */
  readonly registrationCodeTtlMs: number
}

/** LOG_LEVEL, METRICS_TOKEN, AUDIT_RETENTION. */
export interface OperationsConfig {
  readonly logLevel: string
  /** Bearer token /metrics requires; open when null. */
  readonly metricsToken: string | null
  /** How long audit events are kept. */
  readonly auditRetentionMs: number
}

/** DATA_ENCRYPTION_KEY, or the development key file beside the SQLite file. */
export interface SecretsConfig {
  /** The first encrypts, all decrypt; `null` to use `dataEncryptionKeyFile`. */
  readonly dataEncryptionKeys: readonly Buffer[] | null
  /** Where a development key is kept (created on first start) when DATA_ENCRYPTION_KEY is unset. */
  readonly dataEncryptionKeyFile: string
}

/** BACKEND_CREDENTIALS (never printed) and RATE_LIMIT_PER_BACKEND. */
export interface BackendsConfig {
  /** Backend id → its secret (a Map: the configuration prints no secret as JSON). Empty: `POST /introspect` is not served. */
  readonly credentials: ReadonlyMap<string, string>
  /** Introspection requests per window per backend; 0 turns the limit off. */
  readonly perBackendMax: number
}

/** One entry of CONSOLE_OPERATORS: a university subject or email address, and its role. */
export interface ConsoleOperator {
  readonly id: string
  readonly role: 'admin' | 'viewer'
}

export interface BackupConfig {
  readonly dir: string
  readonly intervalMs: number
  /** How many finished copies are kept, newest first. */
  readonly keep: number
}

/** Lifecycle events (docs/webhooks.md). */
export interface WebhookConfig {
  /** WEBHOOK_URL: every endpoint gets every event; empty: webhooks off. */
  readonly endpoints: readonly string[]
  /** WEBHOOK_SECRET: `whsec_<base64>` each; every one signs every try. */
  readonly secrets: readonly string[]
  /** WEBHOOK_RETRY_FOR: how long failed tries are made again before the event is dead. */
  readonly retryForMs: number
  /** A try not answered 2xx within this is abandoned (docs/webhooks.md: 10 s; tests shorten it). */
  readonly tryTimeoutMs: number
  /** How often the worker looks for due tries unwoken (a change wakes it at once). */
  readonly pollIntervalMs: number
}
