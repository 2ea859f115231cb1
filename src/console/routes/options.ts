import type { AccessRequests } from '../../accounts/access.js'
import type { Accounts } from '../../accounts/users.js'
import type { AuditTrail } from '../../audit/audit.js'
import type { ConsoleOperator } from '../../config.js'
import type { Clock } from '../../clock.js'
import type { Queryable } from '../../db/schema.js'
import type { WebhookEvents } from '../../events/service.js'
import type { Outbox } from '../../mail/outbox-service.js'
import type { Sessions } from '../../sessions/service.js'
import type { OidcClient } from '../../university/oidc-client.js'
import type { ConsoleSessions } from '../service.js'
import type { PageKit } from './kit.js'

export interface ConsoleRoutesOptions {
  publicBaseUrl: string
  sessions: Pick<Sessions, 'activeUsersByDay'>
  consoleSessions: ConsoleSessions
  accounts: Accounts
  access: AccessRequests
  auditTrail: AuditTrail
  webhookEvents: WebhookEvents
  outbox: Outbox
  db: Queryable
  clock: Clock
  linkMaxAgeMs: number | null
  /** Throws when this instance is not ready (the same check as /readyz). */
  checkReady(): Promise<void>
  /** The university sign-in of CONSOLE_OPERATORS (UNIVERSITY_PROTOCOL=oidc); null: links only. */
  consoleOidc: OidcClient | null
  operators: readonly ConsoleOperator[]
  /** Null when this service takes no backups of its own. */
  newestBackupAt: (() => number | null) | null
}

/** What each section's routes get: the console's options and the page kit. */
export type SectionOptions = ConsoleRoutesOptions & { kit: PageKit; cookieName: string }

/** Console pages answer HTML whatever Accept says; the API's media type rules are not theirs. */
export const PAGE = { config: { versionedMediaType: false }, schema: { hide: true } } as const
