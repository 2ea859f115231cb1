import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import type { FastifyBaseLogger } from 'fastify'
import { sql, type Kysely } from 'kysely'
import { createPeriodicJob, type PeriodicJob } from '../lib/periodic-job.js'
import type { Database } from '../db/schema.js'

/** What one checkpoint did (SQLite's `wal_checkpoint` row): frames in the WAL, and copied back. */
export interface CheckpointRound {
  busy: number
  log: number
  checkpointed: number
}

/**
 * How large the WAL may grow (pages) before a commit checkpoints it itself, on the event loop: a
 * safety net for when the worker falls behind. SQLite's default, 1,000, made every seventieth
 * registration copy 4 MB back and sync the file on the request path; measured outside HTTP,
 * that was three quarters of a registration's commit (docs/performance.md).
 */
export const WAL_AUTOCHECKPOINT_PAGES = 10_000

// CommonJS, evaluated: better-sqlite3 comes by the path the main thread resolved, so the worker
// works from src/ under tsx and from dist/ alike, whatever the working directory.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const SQLite = require(workerData.driver)
let db = null
parentPort.on('message', (message) => {
  if (message === 'close') {
    if (db !== null) db.close()
    parentPort.close()
    return
  }
  try {
    if (db === null) db = new SQLite(workerData.path, { fileMustExist: true })
    parentPort.postMessage({ result: db.pragma('wal_checkpoint(PASSIVE)')[0] })
  } catch (error) {
    parentPort.postMessage({ error: { message: String(error && error.message), code: error && error.code } })
  }
})
`

/**
 * Copies the SQLite WAL back into the database file on a worker thread, every `intervalMs`, with
 * a PASSIVE checkpoint: it waits for no reader or writer, and the commits on the event loop no
 * longer pay for the copy and the file sync. One round at a time; a failed round (a full disk)
 * is logged and retried by the periodic job's backoff.
 */
export function createWalCheckpoints(options: {
  db: Kysely<Database>
  sqlitePath: string
  intervalMs: number
  log: FastifyBaseLogger
}): PeriodicJob<CheckpointRound> {
  let worker: Worker | null = null
  let safetyNetSet = false

  function checkpointOnWorker(): Promise<CheckpointRound> {
    if (worker === null) {
      worker = new Worker(WORKER_SOURCE, {
        eval: true,
        workerData: {
          path: options.sqlitePath,
          driver: createRequire(import.meta.url).resolve('better-sqlite3'),
        },
      })
    }
    const current = worker
    // Held while a round runs (its caller awaits it); an idle worker never keeps the process alive.
    current.ref()
    return new Promise((resolve, reject) => {
      const onError = (error: Error): void => {
        worker = null
        reject(error)
      }
      current.once('error', onError)
      current.once(
        'message',
        (reply: { result?: CheckpointRound; error?: { message: string } }) => {
          current.off('error', onError)
          current.unref()
          if (reply.result !== undefined) resolve(reply.result)
          else
            reject(
              Object.assign(new Error(reply.error?.message ?? 'checkpoint failed'), reply.error),
            )
        },
      )
      current.postMessage('checkpoint')
    })
  }

  const job = createPeriodicJob(
    async () => {
      if (!safetyNetSet) {
        await sql`PRAGMA wal_autocheckpoint = ${sql.lit(WAL_AUTOCHECKPOINT_PAGES)}`.execute(
          options.db,
        )
        safetyNetSet = true
      }
      return checkpointOnWorker()
    },
    { intervalMs: options.intervalMs, log: options.log, name: 'WAL checkpoint', runOnStart: false },
  )
  return {
    ...job,
    async stop() {
      await job.stop()
      const stopping = worker
      worker = null
      if (stopping === null) return
      const exited = new Promise((resolve) => stopping.once('exit', resolve))
      stopping.ref()
      stopping.postMessage('close')
      await exited
    },
  }
}
