import type { BackupConfig } from './types.js'
import { type Env, fail, type Problems, read } from './problems.js'
import { duration, integer } from './readers.js'

/**
 * BACKUP_DIR and BACKUP_INTERVAL together turn the service's own backups on; one without the other
 * is a mistake, not "off". They are SQLite's: PostgreSQL is backed up with its own tools
 * (docs/operations.md), so asking the service to do it there stops start-up.
 */
export function readBackups(
  env: Env,
  { guard }: Problems,
  databaseUrl: string,
): BackupConfig | null {
  return guard(null, () => backups(env, databaseUrl))
}

function backups(env: Env, databaseUrl: string): BackupConfig | null {
  const dir = read(env, 'BACKUP_DIR')
  const interval = read(env, 'BACKUP_INTERVAL')
  const keep = integer(env, 'BACKUP_KEEP', 7, 1, 10_000)
  if (dir === undefined && interval === undefined) return null
  if (dir === undefined) fail('BACKUP_DIR', 'is required when BACKUP_INTERVAL is set')
  if (interval === undefined) fail('BACKUP_INTERVAL', 'is required when BACKUP_DIR is set')
  if (!databaseUrl.startsWith('sqlite:')) {
    fail(
      'BACKUP_DIR',
      'the service backs up SQLite only; back up PostgreSQL with pg_dump or base backups (docs/operations.md)',
    )
  }
  if (databaseUrl === 'sqlite::memory:')
    fail('BACKUP_DIR', 'an in-memory database has no file to back up')
  const intervalMs = duration(env, 'BACKUP_INTERVAL', interval, '30d')
  if (intervalMs < 60_000) fail('BACKUP_INTERVAL', `"${interval}" is shorter than the 1m allowed`)
  return Object.freeze({ dir, intervalMs, keep })
}
