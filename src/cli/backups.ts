import { existsSync, mkdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { systemClock } from '../clock.js'
import type { Config } from '../config.js'
import { EXIT, type Command, type Io } from './command.js'

/** The SQLite file of the configuration, or null (after saying why) when there is none. */
function sqliteFileOf(config: Config, io: Io, command: string): string | null {
  const url = config.database.url
  if (!url.startsWith('sqlite:')) {
    io.err(
      `campusgate ${command}: DATABASE_URL is PostgreSQL; back it up and restore it with ` +
        `pg_dump / pg_restore or base backups (docs/operations.md)\n`,
    )
    return null
  }
  const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '')
  if (path === ':memory:') {
    io.err(`campusgate ${command}: an in-memory database has no file\n`)
    return null
  }
  return path
}

const backup: Command = {
  name: 'backup',
  summary: 'write a checked copy of the SQLite database while the service serves',
  usage:
    '  campusgate backup PATH        (PATH: a new file, or a folder to write a dated copy in;\n' +
    '                                 one ending in / is made when missing)',
  options: {},
  positionals: ['PATH'],
  async run({ config, values, io }) {
    // SQLite's driver is loaded when it runs, not when the command line is read (maintenance.ts).
    const [{ backupNameAt }, { backupSqlite }] = await Promise.all([
      import('../backup/schedule.js'),
      import('../backup/sqlite-backup.js'),
    ])
    const source = sqliteFileOf(config, io, 'backup')
    if (source === null) return EXIT.failure
    if (!existsSync(source)) {
      io.err(`campusgate backup: ${source} does not exist\n`)
      return EXIT.failure
    }
    let target = String(values.PATH)
    // A path ending in a slash names a folder: made when missing (0700, as the copies are 0600),
    // so the first backup into a new volume needs no mkdir (docs/operations.md, "Backups and restores").
    if (target.endsWith('/') && !existsSync(target))
      mkdirSync(target, { recursive: true, mode: 0o700 })
    if (existsSync(target) && statSync(target).isDirectory()) {
      target = join(target, backupNameAt(systemClock.now().getTime()))
    }
    if (existsSync(target)) {
      io.err(`campusgate backup: ${target} exists; name a new file\n`)
      return EXIT.failure
    }
    io.err(`copying ${source}…\n`)
    const { bytes } = await backupSqlite(source, target)
    io.out(`backup written to ${target} (${bytes} bytes, mode 0600); integrity_check ok\n`)
    return EXIT.ok
  },
}

const restore: Command = {
  name: 'restore',
  summary: "put a checked backup in place of the stopped service's SQLite database",
  usage: '  campusgate restore PATH       (stop the service first)',
  options: {},
  positionals: ['PATH'],
  async run({ config, values, io }) {
    const target = sqliteFileOf(config, io, 'restore')
    if (target === null) return EXIT.failure
    const from = String(values.PATH)
    const { BackupRejected, restoreSqlite } = await import('../backup/sqlite-backup.js')
    try {
      const { bytes } = restoreSqlite(from, target)
      io.out(
        `restored ${from} into ${target} (${bytes} bytes); integrity_check ok. ` +
          `Start the service: it applies any newer migrations.\n`,
      )
      return EXIT.ok
    } catch (error) {
      if (!(error instanceof BackupRejected)) throw error
      io.err(`campusgate restore: refused, the database is unchanged: ${error.message}\n`)
      return EXIT.failure
    }
  },
}

export const backupCommands: readonly Command[] = [backup, restore]
