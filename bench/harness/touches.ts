// Steady-state touches (issue 38): each session is due a write-back once per SESSION_TOUCH_INTERVAL,
// as under real traffic, where a student's requests mostly come more than an interval apart.
//
// Before each run of a scenario at steady touches, the sessions of one window (a range of the
// ids' last digits, `IN_WINDOW`: a share `seconds / interval` of them, scattered over the table
// and arbitrary with respect to the keys) get their touched_at spread over the interval that ends
// as the run ends: each becomes due at a uniformly drawn moment of the run, exactly as when every
// session's touched_at is spread over the last interval at its start. All other sessions were
// touched "just now" (seed.ts sets them a day ahead), so they are not due. After the run, the
// touches are counted in the database (rows of the window whose touched_at fell within the run),
// and the window is set back to not due.
import SQLite from 'better-sqlite3'
import pg from 'pg'
import type { Engine } from './plan.js'

/** Ids are random UUIDs: eight hex digits are uniform, so a range of them is a share. */
const SPACE = 0x1_0000_0000

export interface Window {
  lo: string
  hi: string
}

const hex8 = (n: number): string =>
  Math.min(n, SPACE - 1)
    .toString(16)
    .padStart(8, '0')

/** The `k`-th window of sessions, a share `share` of them; windows repeat after 1 / share. */
export function windowOf(k: number, share: number): Window {
  const width = Math.max(1, Math.floor(SPACE * Math.min(1, share)))
  const count = Math.max(1, Math.floor(SPACE / width))
  const start = (k % count) * width
  // The last window reaches the end of the id space ('g' sorts after every hex digit).
  return { lo: hex8(start), hi: start + width >= SPACE ? 'g' : hex8(start + width) }
}

export interface TouchControl {
  /** Makes the window's sessions due at uniform moments of [start, start + spanMs]. */
  spread(window: Window, start: number, spanMs: number, intervalMs: number): Promise<void>
  /** Sessions (of the window, or all) whose touched_at lies in [from, to]: the run's touches. */
  count(window: Window | null, from: number, to: number): Promise<number>
  /** Sets the window back to not due (touched a day ahead, as seeded). */
  settle(window: Window, notDueAt: number): Promise<void>
  close(): Promise<void>
}

/**
 * A window is a range of the ids' last eight hex digits (as random as the first), so its
 * sessions lie scattered over the whole table as due sessions do under real traffic. A range of
 * the first digits is a contiguous run of pages (the seeders insert in id order): on PostgreSQL
 * the bulk updates that make it due and settle it used up the free space of exactly those pages,
 * which the touches of the run then needed for heap-only updates; on either database its touches
 * rewrote a few pages over and over. Found by a full scan: before and after a run, never during
 * it. SQLite and PostgreSQL both number `substr`'s characters from 1.
 */
const IN_WINDOW = (p: (i: number) => string, from: number) =>
  `substr(id, 29, 8) >= ${p(from)} AND substr(id, 29, 8) < ${p(from + 1)}`
const COUNT_ALL = (p: (i: number) => string) =>
  `SELECT count(*) AS n FROM sessions WHERE touched_at >= ${p(1)} AND touched_at <= ${p(2)}`
const COUNT_WINDOW = (p: (i: number) => string) => `${COUNT_ALL(p)} AND ${IN_WINDOW(p, 3)}`
const SETTLE = (p: (i: number) => string) =>
  `UPDATE sessions SET touched_at = ${p(1)} WHERE ${IN_WINDOW(p, 2)}`

export function touchControl(engine: Engine, where: string): TouchControl {
  return engine === 'sqlite' ? sqliteControl(where) : postgresControl(where)
}

function sqliteControl(path: string): TouchControl {
  const db = new SQLite(path)
  db.pragma('busy_timeout = 10000')
  const q = () => '?'
  const spread = db.prepare(
    `UPDATE sessions SET touched_at = ? + ((abs(random()) % 1000000) * ?) / 1000000
      WHERE ${IN_WINDOW(q, 3)}`,
  )
  const countAll = db.prepare(COUNT_ALL(q))
  const countWindow = db.prepare(COUNT_WINDOW(q))
  const settle = db.prepare(SETTLE(q))
  // The bench's own writes are not left in the WAL for the measured runs to read around.
  const checkpoint = () => db.pragma('wal_checkpoint(PASSIVE)')
  return {
    spread: async (window, start, spanMs, intervalMs) => {
      spread.run(start - intervalMs, spanMs, window.lo, window.hi)
      checkpoint()
    },
    count: async (window, from, to) =>
      Number(
        (
          (window === null
            ? countAll.get(from, to)
            : countWindow.get(from, to, window.lo, window.hi)) as { n: number }
        ).n,
      ),
    settle: async (window, notDueAt) => {
      settle.run(notDueAt, window.lo, window.hi)
      checkpoint()
    },
    close: async () => void db.close(),
  }
}

function postgresControl(url: string): TouchControl {
  const client = new pg.Client({ connectionString: url })
  const connected = client.connect()
  const p = (i: number) => `$${i}`
  const run = async (sql: string, values: unknown[]) => {
    await connected
    return client.query<{ n: string }>(sql, values)
  }
  return {
    spread: async (window, start, spanMs, intervalMs) => {
      await run(
        `UPDATE sessions SET touched_at = $1::bigint + floor(random() * $2::bigint)::bigint
          WHERE ${IN_WINDOW(p, 3)}`,
        [start - intervalMs, spanMs, window.lo, window.hi],
      )
    },
    count: async (window, from, to) =>
      Number(
        (
          await (window === null
            ? run(COUNT_ALL(p), [from, to])
            : run(COUNT_WINDOW(p), [from, to, window.lo, window.hi]))
        ).rows[0].n,
      ),
    settle: async (window, notDueAt) => {
      await run(SETTLE(p), [notDueAt, window.lo, window.hi])
    },
    close: async () => {
      await connected
      await client.end()
    },
  }
}
