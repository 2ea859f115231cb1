import { setTimeout as sleep } from 'node:timers/promises'
import type { AuditEventRow } from '../db/schema.js'
import { EXIT, NotFoundError, UsageError, type Command } from './command.js'
import { withServices } from './maintenance.js'

function count(raw: unknown, name: string, fallback: number): number {
  if (raw === undefined) return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < 1 || value > 10_000)
    throw new UsageError(`--${name} must be a whole number from 1 to 10000`)
  return value
}

/** `s***@example.edu`: enough to recognise a recipient, not to harvest addresses. */
function maskAddress(address: string): string {
  const at = address.lastIndexOf('@')
  return at <= 0 ? '***' : `${address[0]}***${address.slice(at)}`
}

const list: Command = {
  name: 'outbox list',
  summary: 'mail waiting for delivery (with --all, also sent and abandoned), newest first',
  usage: '  campusgate outbox list [--all] [--limit <n>] [--json]',
  options: { all: { type: 'boolean' }, limit: { type: 'string' }, json: { type: 'boolean' } },
  optionHelp: {
    all: 'also mail already sent or abandoned',
    limit: 'at most this many rows (default 50)',
    json: 'one JSON object per line',
  },
  async run({ config, values, io }) {
    const limit = count(values.limit, 'limit', 50)
    return withServices(config, io, async ({ outbox }) => {
      const mails = await outbox.list({ includeFinished: values.all === true, limit })
      for (const mail of mails) {
        const view = {
          id: mail.id,
          state: mail.state,
          to: maskAddress(mail.recipient),
          queuedAt: new Date(mail.createdAt).toISOString(),
          attempts: mail.attempts,
          nextAttemptAt:
            mail.state === 'queued' ? new Date(mail.nextAttemptAt).toISOString() : null,
          lastError: mail.lastError,
        }
        io.out(
          values.json === true
            ? `${JSON.stringify(view)}\n`
            : `${view.id}  ${view.state.padEnd(9)}  ${view.queuedAt}  ${view.to}  ` +
                `attempts ${view.attempts}` +
                (view.nextAttemptAt === null ? '' : `, next ${view.nextAttemptAt}`) +
                (view.lastError === null ? '' : `, last error: ${view.lastError}`) +
                '\n',
        )
      }
      if (mails.length === 0 && values.json !== true) io.err('no mail\n')
      return EXIT.ok
    })
  },
}

const retry: Command = {
  name: 'outbox retry',
  summary:
    'make queued mail due now (ends its backoff); a running service delivers it within seconds',
  usage: '  campusgate outbox retry [--id <mailId>]',
  options: { id: { type: 'string' } },
  optionHelp: { id: 'only this mail (default: every queued mail)' },
  async run({ config, values, io }) {
    const id = typeof values.id === 'string' ? values.id : null
    return withServices(config, io, async ({ outbox }) => {
      const due = await outbox.retry(id)
      if (id !== null && due === 0) throw new NotFoundError(`no queued mail ${id}`)
      io.out(`${due} queued mail(s) due now\n`)
      return EXIT.ok
    })
  },
}

function describeEvent(row: AuditEventRow): string {
  const parts = [new Date(row.at).toISOString(), row.type.padEnd(22), row.actor]
  if (row.open_id !== null) parts.push(`openId=${row.open_id}`)
  else if (row.user_id !== null) parts.push(`user=${row.user_id}`)
  if (row.ip !== null) parts.push(`from ${row.ip}`)
  if (row.detail !== null) parts.push(row.detail)
  return `${parts.join('  ')}\n`
}

const tail: Command = {
  name: 'audit tail',
  summary: 'the latest audit events, oldest first; --follow prints new ones as they come',
  usage: '  campusgate audit tail [--follow] [--limit <n>] [--open-id <openId>] [--json]',
  options: {
    follow: { type: 'boolean', short: 'f' },
    limit: { type: 'string', short: 'n' },
    'open-id': { type: 'string' },
    json: { type: 'boolean' },
  },
  optionHelp: {
    follow: 'keep printing new events until interrupted (Ctrl-C)',
    limit: 'how many of the latest events to print first (default 20)',
    'open-id': "only this user's events",
    json: 'one JSON object per line',
  },
  async run({ config, values, io }) {
    const limit = count(values.limit, 'limit', 20)
    const openId = typeof values['open-id'] === 'string' ? values['open-id'] : null
    const print = (row: AuditEventRow): void =>
      io.out(
        values.json === true
          ? `${JSON.stringify({ ...row, at: new Date(row.at).toISOString(), detail: row.detail === null ? null : (JSON.parse(row.detail) as unknown) })}\n`
          : describeEvent(row),
      )
    return withServices(config, io, async ({ auditTrail }) => {
      const first = await auditTrail.latest(limit, openId)
      first.forEach(print)
      if (values.follow !== true) return EXIT.ok
      let cursor = first.at(-1) ?? { at: 0, id: '' }
      const stop = new AbortController()
      const onSignal = (): void => stop.abort()
      process.once('SIGINT', onSignal)
      process.once('SIGTERM', onSignal)
      try {
        while (!stop.signal.aborted) {
          const rows = await auditTrail.after(cursor, 500, openId)
          rows.forEach(print)
          cursor = rows.at(-1) ?? cursor
          if (rows.length < 500)
            await sleep(1000, undefined, { signal: stop.signal }).catch(() => undefined)
        }
      } finally {
        process.off('SIGINT', onSignal)
        process.off('SIGTERM', onSignal)
      }
      return EXIT.ok
    })
  },
}

export const recordCommands: readonly Command[] = [list, retry, tail]
