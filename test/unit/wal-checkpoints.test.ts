import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import pino from 'pino'
import { sql } from 'kysely'
import { createDb } from '../../src/db/database.js'
import { migrateToLatest } from '../../src/db/migrate.js'
import {
  createWalCheckpoints,
  WAL_AUTOCHECKPOINT_PAGES,
} from '../../src/maintenance/wal-checkpoints.js'

const PAGE = 4096
/** WAL frames the file has room for: a frame is a page and its 24-byte header. */
const walFrames = (path: string): number => Math.floor(statSync(`${path}-wal`).size / (PAGE + 24))

describe('WAL checkpoints on a worker thread', () => {
  const dir = mkdtempSync(join(tmpdir(), 'campusgate-wal-'))
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('commits leave the WAL to the worker, which copies all of it back and lets it be reused', async () => {
    const path = join(dir, 'test.db')
    const db = createDb(`sqlite:${path}`, { poolSize: 1 })
    await migrateToLatest(db)
    const checkpoints = createWalCheckpoints({
      db: db.kysely,
      sqlitePath: path,
      intervalMs: 60_000,
      log: pino({ level: 'silent' }),
    })
    try {
      // The first round raises the commits' own threshold to the safety net.
      await checkpoints.runOnce()
      const { rows } = await sql<{
        wal_autocheckpoint: number
      }>`PRAGMA wal_autocheckpoint`.execute(db.kysely)
      assert.equal(rows[0]?.wal_autocheckpoint, WAL_AUTOCHECKPOINT_PAGES)

      // About 3,000 pages of commits, one user each: with SQLite's default threshold (1,000
      // pages) a commit would have checkpointed and the WAL would have been reused from the start.
      const now = Date.now()
      for (let i = 0; i < 1500; i += 1) {
        await db.kysely
          .insertInto('users')
          .values({
            id: `user-${i}-${'x'.repeat(200)}`,
            created_at: now,
            updated_at: now,
          })
          .execute()
      }
      const grown = walFrames(path)
      assert.ok(grown > 1000, `the WAL holds ${grown} frames`)

      const round = await checkpoints.runOnce()
      assert.ok(round.log >= grown, `a round sees the whole WAL (${round.log} of ${grown})`)
      assert.equal(round.checkpointed, round.log, 'and copies every frame back')
      assert.equal(round.busy, 0)

      // Copied back, the WAL starts over: new commits do not grow the file.
      await db.kysely
        .insertInto('users')
        .values({ id: 'after', created_at: now, updated_at: now })
        .execute()
      assert.equal(walFrames(path), grown)
    } finally {
      await checkpoints.stop()
      await db.kysely.destroy()
    }
  })

  it('a round that cannot open the database fails, and the next one works again', async () => {
    const path = join(dir, 'later.db')
    const checkpoints = createWalCheckpoints({
      db: createDb('sqlite::memory:', { poolSize: 1 }).kysely,
      sqlitePath: path,
      intervalMs: 60_000,
      log: pino({ level: 'silent' }),
    })
    try {
      await assert.rejects(checkpoints.runOnce(), /unable to open database file/)
      const db = createDb(`sqlite:${path}`, { poolSize: 1 })
      await migrateToLatest(db)
      await db.kysely.destroy()
      const round = await checkpoints.runOnce()
      assert.equal(round.busy, 0)
    } finally {
      await checkpoints.stop()
    }
  })
})
