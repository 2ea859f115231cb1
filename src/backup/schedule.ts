import { mkdirSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyBaseLogger } from 'fastify'
import type { Kysely } from 'kysely'
import type { Clock } from '../clock.js'
import type { BackupConfig } from '../config.js'
import { tryAcquireLease } from '../db/leases.js'
import type { Database } from '../db/schema.js'
import { createPeriodicJob, type PeriodicJob } from '../lib/periodic-job.js'
import { newId } from '../lib/secrets.js'
import { backupSqliteOffThread } from './sqlite-backup.js'

/** What a round did: the copy it wrote and the old ones it removed, or why it wrote none. */
export type BackupRound =
  | { written: string; bytes: number; removed: string[] }
  | { skipped: 'another-instance' | 'recent-enough' }

export interface BackupSchedule extends PeriodicJob<BackupRound> {
  /** When the newest finished backup in the folder was taken, or null when there is none. */
  newestAt(): number | null
}

// campusgate-20260101T000000.000Z.db: the time it was taken, so names sort as times do.
const BACKUP_NAME = /^campusgate-(\d{8}T\d{6}\.\d{3}Z)\.db$/
const PARTIAL_NAME = /^\.campusgate-.*\.db\.partial$/

export function backupNameAt(ms: number): string {
  return `campusgate-${new Date(ms).toISOString().replace(/[-:]/g, '')}.db`
}

function takenAt(name: string): number | null {
  const stamp = BACKUP_NAME.exec(name)?.[1]
  if (stamp === undefined) return null
  const iso = stamp.replace(/^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})/, '$1-$2-$3T$4:$5:$6')
  const ms = Date.parse(iso)
  return Number.isNaN(ms) ? null : ms
}

/** The finished backups in `dir`, newest first (an unfinished copy has another name). */
export function listBackups(dir: string): { name: string; at: number }[] {
  let names: string[]
  try {
    names = readdirSync(dir)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw error
  }
  return names
    .flatMap((name) => {
      const at = takenAt(name)
      return at === null ? [] : [{ name, at }]
    })
    .sort((a, b) => b.at - a.at)
}

/**
 * The service's own backups (BACKUP_DIR, BACKUP_INTERVAL, BACKUP_KEEP): a round takes the
 * `backup` lease, so of several instances on one database one copies per interval, writes a
 * checked copy and removes the oldest beyond BACKUP_KEEP. A round soon after the newest copy (a
 * restarted service) writes none.
 */
export function createBackupSchedule(options: {
  db: Kysely<Database>
  sqlitePath: string
  config: BackupConfig
  clock: Clock
  log: FastifyBaseLogger
}): BackupSchedule {
  const { db, sqlitePath, config, clock, log } = options
  const holder = newId()

  async function round(): Promise<BackupRound> {
    const now = clock.now().getTime()
    const acquired = await tryAcquireLease(
      db,
      { name: 'backup', holder, ttlMs: config.intervalMs },
      now,
    )
    if (!acquired) return { skipped: 'another-instance' }
    const newest = listBackups(config.dir)[0]
    // A little slack: the timer and the clock need not agree to the millisecond.
    if (newest !== undefined && now - newest.at < config.intervalMs * 0.9) {
      return { skipped: 'recent-enough' }
    }
    mkdirSync(config.dir, { recursive: true, mode: 0o700 })
    // Copies a crashed round left: the lease says no other round is writing one now.
    for (const name of readdirSync(config.dir)) {
      if (PARTIAL_NAME.test(name)) rmSync(join(config.dir, name), { force: true })
    }
    const name = backupNameAt(now)
    const { bytes } = await backupSqliteOffThread(sqlitePath, join(config.dir, name))
    const removed = listBackups(config.dir)
      .slice(config.keep)
      .map((old) => {
        rmSync(join(config.dir, old.name), { force: true })
        return old.name
      })
    log.info(
      { backup: join(config.dir, name), bytes, removed, kept: config.keep },
      'backup written and checked (integrity_check ok)',
    )
    return { written: join(config.dir, name), bytes, removed }
  }

  const job = createPeriodicJob(round, {
    intervalMs: config.intervalMs,
    log,
    name: 'backup',
    runOnStart: true,
  })
  return {
    ...job,
    newestAt: () => listBackups(config.dir)[0]?.at ?? null,
  }
}
