import type { BackupSchedule } from '../backup/schedule.js'
import type { PeriodicJob } from '../lib/periodic-job.js'
import { createWalCheckpoints } from '../maintenance/wal-checkpoints.js'
import type { ServicesDeps } from './deps.js'

/**
 * How often a SQLite database's WAL is copied back into its file, off the event loop: a quarter
 * of a second of writes is at most a few thousand pages, well under the commits' safety net.
 */
const WAL_CHECKPOINT_INTERVAL_MS = 250

/**
 * The background jobs of every instance (docs/architecture.md, "A background job"): the ones the
 * services made, and SQLite's own where there is a file. They start when the app is ready and stop
 * when it closes.
 */
export function backgroundJobs(
  deps: ServicesDeps,
  made: {
    jobs: readonly PeriodicJob<unknown>[]
    backups: BackupSchedule | null
  },
): PeriodicJob<unknown>[] {
  const { db, log } = deps
  const jobs: PeriodicJob<unknown>[] = [...made.jobs]
  if (made.backups !== null) jobs.push(made.backups)
  if (db.sqlitePath !== null) {
    jobs.push(
      createWalCheckpoints({
        db: db.kysely,
        sqlitePath: db.sqlitePath,
        intervalMs: WAL_CHECKPOINT_INTERVAL_MS,
        log: log.child({ component: 'wal-checkpoint' }),
      }),
    )
  }
  return jobs
}
