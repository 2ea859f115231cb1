import { createOutbox, type Outbox } from '../mail/outbox-service.js'
import { createMailTransport, type MailTransport } from '../mail/transport.js'
import { createMailWorker, type MailWorker } from '../mail/worker.js'
import type { Metrics } from '../operations/metrics.js'
import { createSandboxMailbox, type SandboxMailbox } from '../sandbox/mailbox.js'
import type { ServicesDeps } from './deps.js'

/** The mail: its transport, the worker that delivers the outbox, the operator's view of it. */
export interface MailParts {
  transport: MailTransport
  worker: MailWorker
  outbox: Outbox
  /** Deletes what the transport kept of these mails (the .eml files of an erased user). */
  discard: (mailIds: readonly string[]) => Promise<void>
  /** In sandbox mode: the mail the playground reads back. */
  mailbox: SandboxMailbox | undefined
}

export function composeMail(deps: ServicesDeps, metrics: Metrics): MailParts {
  const { config, db, clock, cipher, log } = deps
  const sandboxed = config.sandbox.messenger || config.sandbox.university
  // In sandbox mode the playground reads the confirmation email back from the sandbox's mailbox.
  const mailbox = sandboxed ? createSandboxMailbox(() => clock.now()) : undefined
  const delivering =
    deps.mailTransport ??
    createMailTransport({
      smtpUrl: config.mail.smtpUrl,
      outboxDir: config.mail.outboxDir,
      from: config.mail.from,
    })
  const transport = mailbox?.keeping(delivering) ?? delivering
  const worker = createMailWorker({
    db: db.kysely,
    dialect: db.dialect,
    clock,
    transport,
    cipher,
    log: log.child({ component: 'mail-worker' }),
    onDelivery: (outcome) => metrics.mailDelivery(outcome),
  })
  return {
    transport,
    worker,
    outbox: createOutbox({ db: db.kysely, clock, onDue: () => worker.kick() }),
    discard: (mailIds) => transport.discard(mailIds),
    mailbox,
  }
}
