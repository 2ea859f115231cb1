import type { ImportReport } from '../original/service.js'
import { openOriginalSource, SourceOptionError } from '../original/source.js'
import { EXIT, UsageError, type Command, type Io } from './command.js'
import { cliOrigin, withDb, withServices } from './maintenance.js'

/** A progress line on stderr this often when stderr is a log, not a terminal. */
const PROGRESS_EVERY_ROWS = 5000

function reportLines(report: ImportReport): string {
  const would = report.dryRun ? 'would be ' : ''
  const counts: [string, number, string][] = [
    [`${would}imported`, report.imported, 'new users, each with its live session'],
    [`${would}updated`, report.updated, 'imported before; the original has a newer key or use'],
    ['skipped as expired', report.skippedExpired, 'LastUsed + SESSION_TTL has passed'],
    ['skipped as logged out', report.skippedLoggedOut, 'the original had ended them'],
    ['skipped as present', report.skippedPresent, 'campusgate holds the same key or a newer one'],
    ['invalid', report.invalid, 'named below; nothing of them was stored'],
  ]
  const width = Math.max(...counts.map(([label]) => label.length))
  const lines = [
    `${report.dryRun ? 'dry run, nothing changed: ' : ''}read ${report.rows} row(s) of UserSessions`,
    ...counts.map(
      ([label, n, why]) => `  ${label.padEnd(width)}  ${String(n).padStart(7)}  (${why})`,
    ),
    ...report.invalidRows.map((row) => `    ${row.name}: ${row.reason}`),
  ]
  if (report.invalid > report.invalidRows.length) {
    lines.push(`    … and ${report.invalid - report.invalidRows.length} more`)
  }
  if (report.tokensNotCarried > 0) {
    lines.push(
      `${report.tokensNotCarried} user(s) had a UclapiToken: imported at tier 1 (messenger-registered); ` +
        'they link their university account again',
    )
  }
  if (report.lastUsedAhead > 0) {
    lines.push(
      `${report.lastUsedAhead} row(s) had a LastUsed ahead of this clock and count from now: ` +
        'check --timezone (the zone the original server wrote LastUsed in)',
    )
  }
  return `${lines.join('\n')}\n`
}

function progressPrinter(io: Io): (progress: { done: number; total: number }) => void {
  let printed = 0
  return ({ done, total }) => {
    const line = `${done} of ${total} row(s) read (${Math.floor((done / Math.max(total, 1)) * 100)}%)`
    if (io.interactive) {
      io.err(`\r${line}${done >= total ? '\n' : ''}`)
    } else if (done - printed >= PROGRESS_EVERY_ROWS || (done >= total && printed > 0)) {
      printed = done
      io.err(`${line}\n`)
    }
  }
}

export const importOriginal: Command = {
  name: 'import-original',
  summary: "bring the original server's users over, keeping their mini-programs signed in",
  usage:
    '  campusgate import-original --from mysql://user@host:port/database [--dry-run] [--timezone <zone>] [--json]',
  options: {
    from: { type: 'string' },
    'dry-run': { type: 'boolean' },
    timezone: { type: 'string' },
    json: { type: 'boolean' },
  },
  optionHelp: {
    from: "the original's MySQL/MariaDB (password here or in MYSQL_PWD)",
    'dry-run': 'read and count only; change nothing',
    timezone: 'zone the original wrote LastUsed in: local (default), Z, +08:00',
    json: 'the report as one JSON object',
  },
  required: ['from'],
  async run({ config, values, env, io }) {
    const dryRun = values['dry-run'] === true
    let source
    try {
      source = await openOriginalSource({
        url: values.from as string,
        timezone: (values.timezone as string | undefined) ?? 'local',
        ...(env.MYSQL_PWD === undefined ? {} : { password: env.MYSQL_PWD }),
      })
    } catch (error) {
      if (error instanceof SourceOptionError) throw new UsageError(error.message)
      throw error
    }
    try {
      // Loaded when it runs, not when the command line is read (maintenance.ts).
      const { pendingMigrations } = await import('../db/migrate.js')
      const pending = await withDb(config, (db) => pendingMigrations(db))
      if (pending.length > 0) {
        io.err('campusgate import-original: the schema is not current; run campusgate migrate\n')
        return EXIT.failure
      }
      return await withServices(config, io, async (services) => {
        io.err(`${dryRun ? 'counting' : 'importing'} UserSessions of ${source.name}…\n`)
        const report = await services.originalImport.run(source, {
          dryRun,
          origin: cliOrigin(),
          onProgress: progressPrinter(io),
        })
        io.out(values.json === true ? `${JSON.stringify(report)}\n` : reportLines(report))
        return EXIT.ok
      })
    } finally {
      await source.close()
    }
  },
}
