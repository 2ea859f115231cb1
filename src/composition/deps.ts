import type { FastifyBaseLogger } from 'fastify'
import type { Clock } from '../clock.js'
import type { Config } from '../config.js'
import type { Db } from '../db/database.js'
import type { Cipher } from '../lib/encryption.js'
import type { MailTransport } from '../mail/transport.js'
import type { PruneCounts } from '../maintenance/pruner.js'

/** What the composition root is built from (services.ts, `createServices`). */
export interface ServicesDeps {
  config: Config
  db: Db
  clock: Clock
  /** Encrypts the secrets campusgate must read back (see secrets-at-rest.ts). */
  cipher: Cipher
  /** Where the services and background jobs log (the app's logger, or the command line's). */
  log: FastifyBaseLogger
  /** Outbound HTTP for the identity provider clients. */
  fetch?: typeof fetch
  /** Mail delivery; default from SMTP_URL (or .eml files). */
  mailTransport?: MailTransport
  /** Told after each batch of expired sessions the pruner ends, for a progress line. */
  onPruneProgress?: (counts: Partial<PruneCounts>) => void
}
