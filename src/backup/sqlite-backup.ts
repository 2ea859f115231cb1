import {
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { Worker } from 'node:worker_threads'
import SQLite from 'better-sqlite3'

/*
 * SQLite backups (docs/operations.md, "Backups and restores"): a consistent copy of the live database made with
 * SQLite's online backup, checked before anyone relies on it, and put back only after checking.
 * This module knows files and SQLite; the schedule and the commands decide when.
 */

/** What `checkBackup` found wrong with a copy; its message is one line for the operator. */
export class BackupRejected extends Error {}

/** The tables a campusgate database has from its first migration on. */
const CAMPUSGATE_TABLES = ['kysely_migration', 'users', 'sessions']

/**
 * Copies the live database at `source` to `target` while the service serves, checks the copy and
 * gives its size. The copy is written under a temporary name in the same folder and renamed into
 * place only once checked, so an unfinished or failed copy never carries a backup's name.
 * The copy is made from a connection of its own in one step: SQLite restarts a backup that
 * another connection writes to between steps, and one step reads one snapshot (WAL mode lets
 * the service keep writing meanwhile). Every change committed before it began is in it.
 */
export async function backupSqlite(source: string, target: string): Promise<{ bytes: number }> {
  const partial = partialNameOf(target)
  // Created empty with mode 0600 before SQLite writes to it: the copy holds what the database holds.
  closeSync(openSync(partial, 'wx', 0o600))
  try {
    const live = new SQLite(source, { readonly: true, fileMustExist: true })
    try {
      live.pragma('busy_timeout = 5000')
      await live.backup(partial, { progress: ({ totalPages }) => Math.max(totalPages, 1) })
    } finally {
      live.close()
    }
    // The copy says WAL as the live database does; a backup is one self-contained file, and
    // reading it must leave no -wal or -shm file beside it. The service sets WAL again on open.
    const copy = new SQLite(partial)
    try {
      copy.pragma('journal_mode = DELETE')
    } finally {
      copy.close()
    }
    checkBackup(partial)
    const fd = openSync(partial, 'r')
    try {
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    renameSync(partial, target)
    syncDirectory(dirname(target))
    return { bytes: statSync(target).size }
  } catch (error) {
    rmSync(partial, { force: true })
    throw error
  }
}

// Runs in a worker thread: imports this very module there and makes the copy. (Run from src/ by
// tsx, as the tests do, the worker registers tsx first: an eval'd worker has no loader hooks.)
// Dynamic imports only: the eval'd code runs as CommonJS or as a module, whichever the process's
// flags say.
const WORKER_SOURCE = `
import('node:worker_threads').then(({ parentPort, workerData }) => {
  const hooks = workerData.tsx ? import(workerData.tsx).then((tsx) => tsx.register()) : Promise.resolve()
  return hooks
    .then(() => import(workerData.module))
    .then((backup) => backup.backupSqlite(workerData.source, workerData.target))
    .then(
      (result) => parentPort.postMessage({ result }),
      (error) => parentPort.postMessage({ error: { message: String(error && error.message), code: error && error.code } }),
    )
})
`

/**
 * `backupSqlite` on a worker thread: copying, checking and syncing a large database take seconds
 * of synchronous work (about 1.4 s per 100 MB), which on the service's own thread would stall
 * every request for as long.
 */
export function backupSqliteOffThread(source: string, target: string): Promise<{ bytes: number }> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        module: import.meta.url,
        tsx: import.meta.url.endsWith('.ts') ? import.meta.resolve('tsx/esm/api') : null,
        source,
        target,
      },
    })
    let settled = false
    worker.once(
      'message',
      (message: { result?: { bytes: number }; error?: { message: string; code?: unknown } }) => {
        settled = true
        if (message.result !== undefined) resolve(message.result)
        else
          reject(
            Object.assign(new Error(message.error?.message ?? 'backup failed'), {
              code: message.error?.code,
            }),
          )
      },
    )
    worker.once('error', (error) => {
      settled = true
      reject(error)
    })
    worker.once('exit', (code) => {
      if (!settled) reject(new Error(`the backup worker exited with code ${code}`))
    })
  })
}

/** The name a copy has while it is written: never one a backup listing counts. */
export function partialNameOf(target: string): string {
  return join(dirname(target), `.${basename(target)}.partial`)
}

/**
 * Throws `BackupRejected` unless `path` is a sound SQLite database (`integrity_check` says ok)
 * that holds a campusgate schema.
 */
export function checkBackup(path: string): void {
  if (!existsSync(path)) throw new BackupRejected(`${path} does not exist`)
  let copy: SQLite.Database
  try {
    copy = new SQLite(path, { readonly: true, fileMustExist: true })
  } catch (error) {
    throw new BackupRejected(`${path} cannot be opened: ${(error as Error).message}`)
  }
  try {
    let verdict: unknown
    try {
      verdict = copy.pragma('integrity_check', { simple: true })
    } catch (error) {
      throw new BackupRejected(
        `${path} is not a sound SQLite database: ${(error as Error).message}`,
      )
    }
    if (verdict !== 'ok') {
      throw new BackupRejected(`${path} failed integrity_check: ${String(verdict)}`)
    }
    const tables = new Set(
      (
        copy.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").all() as {
          name: string
        }[]
      ).map((row) => row.name),
    )
    const missing = CAMPUSGATE_TABLES.filter((name) => !tables.has(name))
    if (missing.length > 0) {
      throw new BackupRejected(
        `${path} is not a campusgate database (no ${missing.join(', ')} table)`,
      )
    }
  } finally {
    copy.close()
  }
}

/**
 * Puts the backup at `backup` in place of the database at `target`, for a stopped service: the
 * backup is checked first, and a rejected one (or a database still in use) changes nothing. The
 * old database's WAL is folded into it first (so nothing of it can be applied to the restored
 * file); then the backup, copied next to it and checked again, is renamed over it, so the
 * database is either the old one or the whole backup.
 */
export function restoreSqlite(backup: string, target: string): { bytes: number } {
  checkBackup(backup)
  if (existsSync(target)) closeOldDatabase(target)
  const partial = partialNameOf(target)
  rmSync(partial, { force: true })
  try {
    closeSync(openSync(partial, 'wx', 0o600))
    copyFileSync(backup, partial)
    checkBackup(partial)
    const fd = openSync(partial, 'r+')
    try {
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    renameSync(partial, target)
    syncDirectory(dirname(target))
  } catch (error) {
    rmSync(partial, { force: true })
    throw error
  }
  return { bytes: statSync(target).size }
}

/**
 * Folds the old database's WAL into it. SQLite removes the WAL when its last connection closes:
 * one that is still there afterwards belongs to a process that has the database open.
 */
function closeOldDatabase(target: string): void {
  const old = new SQLite(target, { fileMustExist: true })
  try {
    old.pragma('busy_timeout = 5000')
    old.pragma('wal_checkpoint(TRUNCATE)')
  } catch (error) {
    // A damaged database (what a restore is often for) has nothing to fold in; a busy one is in use.
    if ((error as { code?: unknown }).code === 'SQLITE_BUSY') {
      throw new BackupRejected(
        `${target} is in use by another process: stop the service before restoring`,
      )
    }
  } finally {
    old.close()
  }
  if (existsSync(`${target}-wal`)) {
    throw new BackupRejected(
      `${target} is in use by another process: stop the service before restoring`,
    )
  }
}

/** Makes a rename in `dir` durable. */
function syncDirectory(dir: string): void {
  const fd = openSync(dir, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}
