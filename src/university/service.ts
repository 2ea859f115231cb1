import type { FastifyBaseLogger } from 'fastify'
import type { Kysely } from 'kysely'
import type { Audit } from '../audit/audit.js'
import type { Clock } from '../clock.js'
import type { Cipher } from '../lib/encryption.js'
import { sealMail } from '../mail/sealed.js'
import type { IdentityBinding } from '../config.js'
import type { Database } from '../db/schema.js'
import type { AccountChanges } from '../accounts/changes.js'
import { AppError } from '../errors.js'
import { generateSecret, hashSecret, MAX_SECRET_LENGTH, newId } from '../lib/secrets.js'
import { confirmationEmail } from './confirmation-email.js'
import type { MailLimits } from '../mail/caps.js'
import { emailDomainAllowed } from './email-domains.js'
import { ProviderUnavailableError } from './oidc-client.js'
import { createCallback, type CallbackInput, type CallbackResult } from './callback.js'
import type { UniversityProtocol } from './protocol.js'
import { samlOf } from './protocols.js'

export type { CallbackInput, CallbackOutcome, CallbackResult } from './callback.js'
import { findLiveCode, insertAttempt } from './store.js'
import { DEFAULT_LOCALE, type Locale } from '../lib/locale.js'

export interface LinkOpened {
  location: string
  attemptCookie: string
  cookieMaxAgeSeconds: number
}

export interface University {
  /** Issues a registration code and queues its confirmation email, in one transaction. */
  /** `locale`: the language the requester reads, first in the email. */
  startRegistration(userId: string, email: string, locale?: Locale): Promise<void>
  /** A click on the emailed link: a new attempt and where to send the browser, or `null` (401). */
  openLink(code: string): Promise<LinkOpened | null>
  /** The identity provider's callback; never throws for bad input (the endpoint always answers 200). */
  handleCallback(input: CallbackInput): Promise<CallbackResult>
  /** The SAML service provider's metadata, when the university speaks SAML; null otherwise. */
  samlMetadata(): string | null
}

export interface UniversityOptions {
  db: Kysely<Database>
  clock: Clock
  /** Encrypts the provider's token and the queued mail's bodies (they hold the live link). */
  cipher: Cipher
  log: FastifyBaseLogger
  audit: Audit
  /** Log confirmation links (only when mail goes to .eml files, for local development). */
  logLinks: boolean
  publicBaseUrl: string
  registrationCodeTtlMs: number
  attemptTtlMs: number
  /** The protocol the university speaks (UNIVERSITY_PROTOCOL, protocols.ts). */
  protocol: UniversityProtocol
  identityBinding: IdentityBinding
  emailDomains: readonly string[] | null
  linkMaxAgeMs: number | null
  mailLimits: MailLimits
  /** Every change the round trip makes: the code and its mail, the attempt's end, the link. */
  changes: AccountChanges
}

export function createUniversity(options: UniversityOptions): University {
  const { db, clock, log, cipher } = options
  const callback = createCallback(options)

  /** Where the link sends the browser: the protocol's authorization request for this attempt. */
  async function locationFor(openId: string, attemptCookie: string): Promise<string> {
    try {
      return await options.protocol.authorizeUrl({ state: openId, cookie: attemptCookie })
    } catch (error) {
      if (error instanceof ProviderUnavailableError) {
        log.warn({ event: 'university-provider-unavailable', err: error.cause }, 'discovery failed')
        throw new AppError('universityProviderUnavailable', { cause: error })
      }
      throw error
    }
  }

  return {
    async startRegistration(userId, email, locale = DEFAULT_LOCALE) {
      if (!emailDomainAllowed(email, options.emailDomains)) {
        throw new AppError('emailDomainNotAllowed')
      }
      const code = generateSecret()
      const now = clock.now().getTime()
      const expiresAt = now + options.registrationCodeTtlMs
      const link = `${options.publicBaseUrl}/authorize/university?universityRegistrationCode=${code}`
      const mail = sealMail(
        cipher,
        confirmationEmail(email, link, options.registrationCodeTtlMs, new Date(now), locale),
      )
      const codeId = newId()
      await options.changes.issueCode({
        code: { id: codeId, userId, codeHash: hashSecret(code), expiresAt },
        mail,
        limits: options.mailLimits,
        now,
      })
      if (options.logLinks) {
        log.info({ link }, 'no SMTP_URL: confirmation email written to the outbox folder')
      }
    },

    async openLink(code) {
      if (code.length > MAX_SECRET_LENGTH) return null
      const now = clock.now().getTime()
      const live = await findLiveCode(db, hashSecret(code), now)
      if (live === null) return null
      // Every open is its own attempt: a mail scanner's prefetch never spoils the user's click.
      const attemptCookie = generateSecret()
      const expiresAt = Math.min(now + options.attemptTtlMs, live.expiresAt)
      const location = await locationFor(live.openId, attemptCookie)
      await insertAttempt(
        db,
        {
          id: newId(),
          userId: live.userId,
          codeId: live.id,
          cookieHash: hashSecret(attemptCookie),
          expiresAt,
        },
        now,
      )
      return {
        location,
        attemptCookie,
        cookieMaxAgeSeconds: Math.max(1, Math.floor((expiresAt - now) / 1000)),
      }
    },

    handleCallback: (input) => callback.handle(input),

    samlMetadata: () => samlOf(options.protocol)?.spMetadata() ?? null,
  }
}
