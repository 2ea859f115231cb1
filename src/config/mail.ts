import { isLoopbackHost } from '../lib/loopback.js'
import { MAIL_LIMIT_WINDOW_MS, OUTBOX_DIR } from './constants.js'
import type { MailConfig } from './types.js'
import { type Env, fail, type Problems, read } from './problems.js'
import { withDefaults } from './readers.js'

/** SMTP_URL, MAIL_FROM, MAIL_LIMIT_PER_USER, MAIL_LIMIT_PER_RECIPIENT. */
export function readMail(env: Env, { guard }: Problems): MailConfig {
  const setting = withDefaults(env, { guard })
  return Object.freeze({
    smtpUrl: guard(null, () => smtpUrl(env)),
    outboxDir: OUTBOX_DIR,
    from: read(env, 'MAIL_FROM') ?? 'campusgate <no-reply@campusgate.invalid>',
    limits: Object.freeze({
      perUser: setting.integer('MAIL_LIMIT_PER_USER', 5, 1, 1_000_000),
      perRecipient: setting.integer('MAIL_LIMIT_PER_RECIPIENT', 5, 1, 1_000_000),
      windowMs: MAIL_LIMIT_WINDOW_MS,
    }),
  })
}

// SMTP_URL query parameters through which nodemailer would weaken or skip TLS.
const SMTP_TLS_PARAMETER = /^(ignoretls|requiretls|opportunistictls|secure|tls(\..*)?)$/i

/**
 * SMTP_URL: a relay off this machine gets TLS (smtps://, or STARTTLS which the transport then
 * requires) with a verified certificate, so no URL parameter may turn that off.
 */
function smtpUrl(env: Env): string | null {
  const raw = read(env, 'SMTP_URL')
  if (raw === undefined) return null
  // Messages never repeat the URL: it may carry the relay's password.
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return fail('SMTP_URL', 'must be smtp://host:port or smtps://…')
  }
  if ((url.protocol !== 'smtp:' && url.protocol !== 'smtps:') || url.hostname === '') {
    fail('SMTP_URL', 'must be smtp://host:port or smtps://…')
  }
  if (!isLoopbackHost(url.hostname)) {
    for (const key of url.searchParams.keys()) {
      if (SMTP_TLS_PARAMETER.test(key)) {
        fail(
          'SMTP_URL',
          `the "${key}" parameter is refused: mail to a remote relay always uses TLS`,
        )
      }
    }
  }
  return raw
}
