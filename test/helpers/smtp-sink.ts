import { once } from 'node:events'
import type { AddressInfo } from 'node:net'
import { simpleParser, type ParsedMail } from 'mailparser'
import { SMTPServer } from 'smtp-server'

/** A real SMTP server on loopback that keeps what it receives. */
export interface SmtpSink {
  port: number
  url: string
  messages: ParsedMail[]
  /** Resolves with the first message (from now or earlier) that matches, or fails after timeoutMs. */
  waitFor(predicate: (mail: ParsedMail) => boolean, timeoutMs?: number): Promise<ParsedMail>
  stop(): Promise<void>
}

/**
 * `starttls` makes the sink offer STARTTLS with smtp-server's built-in self-signed certificate,
 * as a default smtp-server (or a local relay) does.
 */
export async function startSmtpSink(
  port = 0,
  options: { starttls?: boolean; host?: string } = {},
): Promise<SmtpSink> {
  const messages: ParsedMail[] = []
  const waiters = new Set<() => void>()
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: options.starttls === true ? ['AUTH'] : ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, _session, callback) {
      simpleParser(stream)
        .then((mail) => {
          messages.push(mail)
          for (const wake of waiters) wake()
          callback()
        })
        .catch(callback)
    },
  })
  const host = options.host ?? '127.0.0.1'
  server.listen(port, host)
  await once(server.server, 'listening')
  const actualPort = (server.server.address() as AddressInfo).port
  return {
    port: actualPort,
    url: `smtp://${host}:${actualPort}`,
    messages,
    waitFor(predicate, timeoutMs = 5000) {
      return new Promise((resolve, reject) => {
        const check = (): boolean => {
          const found = messages.find(predicate)
          if (found === undefined) return false
          waiters.delete(wake)
          clearTimeout(timer)
          resolve(found)
          return true
        }
        const wake = (): void => void check()
        const timer = setTimeout(() => {
          waiters.delete(wake)
          reject(new Error(`no matching mail within ${timeoutMs} ms (${messages.length} received)`))
        }, timeoutMs)
        waiters.add(wake)
        check()
      })
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

/** The confirmation link in a mail's text part. */
/** Every address a mail was sent to. */
export function recipients(mail: ParsedMail): string[] {
  const to = mail.to === undefined ? [] : Array.isArray(mail.to) ? mail.to : [mail.to]
  return to.flatMap((group) => group.value.map((address) => address.address ?? ''))
}

export function linkIn(mail: ParsedMail): string {
  const match = /https?:\/\/\S+universityRegistrationCode=[A-Za-z0-9_-]+/.exec(mail.text ?? '')
  if (!match) throw new Error('no confirmation link in the mail')
  return match[0]
}
