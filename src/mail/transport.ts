import { mkdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import nodemailer from 'nodemailer'

export interface Mail {
  to: string
  subject: string
  text: string
  html: string
}

/** Delivers one mail or throws; retries are the worker's business. */
export interface MailTransport {
  /** `mailId` names the outbox row, so what the transport keeps of it can be found again. */
  send(mail: Mail, mailId: string): Promise<void>
  /** Forgets what the transport kept of these mails (the .eml files); a no-op over SMTP. */
  discard(mailIds: readonly string[]): Promise<void>
  close(): void
}

export interface MailTransportOptions {
  /** `smtp://…` / `smtps://…`; `null` writes .eml files instead. */
  smtpUrl: string | null
  outboxDir: string
  from: string
}

/** SMTP through nodemailer, or .eml files in `outboxDir` when no SMTP server is configured. */
export function createMailTransport(options: MailTransportOptions): MailTransport {
  if (options.smtpUrl === null) return fileTransport(options)
  // A connection per mail: nothing to go stale while the SMTP server restarts.
  const transporter = nodemailer.createTransport({
    url: options.smtpUrl,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 20_000,
    // A relay on this machine often offers STARTTLS with a self-signed certificate; the traffic
    // never leaves the host, so its certificate is not checked. Remote relays are verified.
    ...(isLoopback(new URL(options.smtpUrl).hostname)
      ? { tls: { rejectUnauthorized: false } }
      : {}),
  })
  return {
    async send(mail) {
      await transporter.sendMail({ from: options.from, ...mail })
    },
    discard: async () => undefined,
    close: () => transporter.close(),
  }
}

function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(hostname)
}

function fileTransport(options: MailTransportOptions): MailTransport {
  const transporter = nodemailer.createTransport({
    streamTransport: true,
    buffer: true,
    newline: 'unix',
  })
  // Named by the outbox row: erasure and pruning delete the file with the row (it holds the link).
  const fileOf = (mailId: string) => join(options.outboxDir, `${mailId}.eml`)
  return {
    async send(mail, mailId) {
      const info = await transporter.sendMail({ from: options.from, ...mail })
      await mkdir(options.outboxDir, { recursive: true, mode: 0o700 })
      await writeFile(fileOf(mailId), info.message as Buffer, { mode: 0o600 })
    },
    async discard(mailIds) {
      await Promise.all(mailIds.map((mailId) => rm(fileOf(mailId), { force: true })))
    },
    close: () => transporter.close(),
  }
}
