import type { FastifyBaseLogger } from 'fastify'
import { systemClock } from '../clock.js'
import type { Config } from '../config.js'
import type { Db } from '../db/database.js'
import { cipherFor } from '../secrets-at-rest.js'
import type { Services, ServicesDeps } from '../services.js'
import type { Origin } from '../audit/audit.js'
import { userInfo } from 'node:os'
import { EXIT, UsageError, type Command, type Io } from './command.js'

// The service's modules (the database drivers, Fastify, every service) are loaded when a command
// runs, not when the command line is read: help and usage errors answer without them
// (docs/operations.md, "The `campusgate` command").

/** The database of the configuration, closed when `work` is done whatever happens. */
export async function withDb<T>(config: Config, work: (db: Db) => Promise<T>): Promise<T> {
  const { createDb } = await import('../db/database.js')
  const db = createDb(config.database.url, { poolSize: Math.min(config.database.poolSize, 2) })
  try {
    return await work(db)
  } finally {
    await db.kysely.destroy()
  }
}

/** Who acts when an operator runs a command: recorded in the audit trail as `cli:<os user>`. */
export function cliOrigin(): Origin {
  let user = 'unknown'
  try {
    user = userInfo().username
  } catch {
    // No passwd entry (a container's arbitrary uid): the actor is still the CLI.
  }
  return { actor: `cli:${user}`, ip: null }
}

/**
 * The services of the configuration (services.ts, as the API builds them), for `work`; the
 * database closes when it is done whatever happens. Commands change things only through these.
 */
export async function withServices<T>(
  config: Config,
  io: Io,
  work: (services: Services) => Promise<T>,
  options: { logLevel?: string; onPruneProgress?: ServicesDeps['onPruneProgress'] } = {},
): Promise<T> {
  const { createServices } = await import('../services.js')
  const log = await cliLogger(io, options.logLevel ?? 'warn')
  return withDb(config, async (db) => {
    const services = createServices({
      config,
      db,
      clock: systemClock,
      cipher: cipherFor(config).cipher,
      log,
      ...(options.onPruneProgress === undefined
        ? {}
        : { onPruneProgress: options.onPruneProgress }),
    })
    try {
      return await work(services)
    } finally {
      await services.close()
    }
  })
}

/** Progress and diagnostics of a command: readable lines on stderr, stdout kept for results. */
async function cliLogger(io: Io, level: string): Promise<FastifyBaseLogger> {
  const [{ default: Fastify }, { default: pretty }] = await Promise.all([
    import('fastify'),
    import('pino-pretty'),
  ])
  const stream = pretty({
    destination: 2,
    colorize: io.interactive,
    translateTime: 'SYS:HH:MM:ss',
    ignore: 'pid,hostname,component',
    sync: true,
  })
  return Fastify({ logger: { level, stream } }).log
}

const migrate: Command = {
  name: 'migrate',
  summary: 'bring the database schema up to date (the service also does this when it starts)',
  usage: '  campusgate migrate [--check]\n  campusgate migrate --to NAME',
  options: { check: { type: 'boolean' }, to: { type: 'string' } },
  optionHelp: {
    check: 'change nothing; exit 1 when a migration is pending',
    to: "take the schema up or down to migration NAME (down: a rollback's first step)",
  },
  async run({ config, values, io }) {
    if (values.check === true && values.to !== undefined) {
      throw new UsageError('--check and --to cannot be given together')
    }
    const { migrateForStart, migrateToNamed, migrationState, MigrationRefused } =
      await import('../db/migrate.js')
    return withDb(config, async (db) => {
      if (typeof values.to === 'string') {
        try {
          const moved = await migrateToNamed(db, values.to)
          io.out(
            moved.length === 0
              ? `schema is at ${values.to}\n`
              : `ran ${moved.join(', ')}; schema is at ${values.to}\n`,
          )
          return EXIT.ok
        } catch (error) {
          if (!(error instanceof MigrationRefused)) throw error
          io.err(`campusgate migrate: ${error.message}\n`)
          return EXIT.failure
        }
      }
      const { pending, unknown } = await migrationState(db)
      if (unknown.length > 0) {
        io.err(`the database holds migrations this build does not know: ${unknown.join(', ')}\n`)
      }
      if (values.check === true) {
        io.out(pending.length === 0 ? 'schema is up to date\n' : `pending: ${pending.join(', ')}\n`)
        return pending.length === 0 ? EXIT.ok : EXIT.failure
      }
      if (pending.length > 0) io.err(`applying ${pending.length} migration(s)…\n`)
      const { applied } = await migrateForStart(db)
      io.out(applied.length === 0 ? 'schema is up to date\n' : `applied ${applied.join(', ')}\n`)
      return EXIT.ok
    })
  },
}

const prune: Command = {
  name: 'prune',
  summary:
    'end expired sessions and delete what can no longer matter, now (the service does it every minute)',
  usage: '  campusgate prune',
  options: {},
  async run({ config, io }) {
    return withServices(
      config,
      io,
      async ({ pruner }) => {
        io.err('pruning…\n')
        const counts = await pruner.runOnce()
        if (counts === null) {
          io.out('another instance is pruning right now; nothing done\n')
          return EXIT.ok
        }
        io.out(
          `ended ${counts.sessions} expired session(s); deleted ${counts.codesAndAttempts} ` +
            `code(s) and attempt(s), ${counts.mails} finished mail(s) and ` +
            `${counts.auditEvents} audit event(s) past AUDIT_RETENTION\n`,
        )
        return EXIT.ok
      },
      {
        logLevel: 'info',
        onPruneProgress: ({ sessions: ended }) => {
          if (ended !== undefined && ended > 0)
            io.err(`ended ${ended} expired session(s) so far…\n`)
        },
      },
    )
  },
}

export const maintenanceCommands: readonly Command[] = [migrate, prune]
