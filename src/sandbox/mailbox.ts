import type { FastifyInstance } from 'fastify'
import { stringField } from '../lib/coerce.js'
import type { Mail, MailTransport } from '../mail/transport.js'

/** Mails kept for the playground; the oldest go first. */
const MAX_MAILS = 50

export interface SandboxMail {
  id: string
  to: string
  subject: string
  text: string
  sentAt: string
}

/**
 * What the sandbox's mail transport delivered, in memory, so the playground can show the
 * confirmation email and follow its link from the browser. Only the sandbox (never production)
 * keeps it; mails the outbox discards (erasure, pruning) go from here too.
 */
export interface SandboxMailbox {
  /** The transport that delivers through `inner` and keeps a copy here. */
  keeping(inner: MailTransport): MailTransport
  /** Newest first. */
  mailsTo(address: string): SandboxMail[]
}

export function createSandboxMailbox(now: () => Date): SandboxMailbox {
  const mails: SandboxMail[] = []
  return {
    keeping(inner) {
      return {
        async send(mail: Mail, mailId: string) {
          await inner.send(mail, mailId)
          const { to, subject, text } = mail
          mails.unshift({ id: mailId, to, subject, text, sentAt: now().toISOString() })
          mails.length = Math.min(mails.length, MAX_MAILS)
        },
        async discard(mailIds) {
          await inner.discard(mailIds)
          const gone = new Set(mailIds)
          const kept = mails.filter((mail) => !gone.has(mail.id))
          mails.splice(0, mails.length, ...kept)
        },
        close: () => inner.close(),
      }
    },
    mailsTo(address) {
      const wanted = address.trim().toLowerCase()
      return mails.filter((mail) => mail.to.toLowerCase() === wanted)
    },
  }
}

/** GET /mailbox?to=: the mails delivered to one address, newest first. */
export function mailboxRoutes(app: FastifyInstance, mailbox: SandboxMailbox): void {
  app.get(
    '/mailbox',
    { config: { versionedMediaType: false }, schema: { hide: true } },
    async (request, reply) => {
      const to = stringField(request.query, 'to')
      if (to === '') return reply.code(400).send({ error: 'the query needs to=<address>' })
      return reply.header('cache-control', 'no-store').send({ mails: mailbox.mailsTo(to) })
    },
  )
}
