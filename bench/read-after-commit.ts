// What another connection's commit costs the key check's next reads
// (docs/performance.md, "The SQLite reader"): the key-check lookup in a tight loop, with one
// touch-like UPDATE every 30 lookups (a morning's share) or none, read on a separate read-only
// connection mapping 1 GiB, 64 MiB or nothing, or on the writing connection itself. One process,
// no HTTP.
// Usage: npx tsx bench/read-after-commit.ts [sessions, default 1000000]
import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'

const N = Number(process.argv[2] ?? 1_000_000)
const READS = 60_000
const WRITE_EVERY = 30
const dir = mkdtempSync(join(tmpdir(), 'campusgate-read-after-commit-'))
const path = join(dir, 'sessions.db')
const hash = (i: number): string => createHash('sha256').update(`key-${i}`).digest('hex')

// The sessions table as the service has it, sorted ids appended: seconds for a million rows.
const seed = new SQLite(path)
seed.pragma('journal_mode = WAL')
seed.pragma('synchronous = OFF')
seed.exec(`CREATE TABLE sessions (id TEXT PRIMARY KEY, key_hash TEXT NOT NULL UNIQUE,
  expires_at INTEGER NOT NULL, touched_at INTEGER NOT NULL);
  CREATE INDEX sessions_expires_at ON sessions (expires_at)`)
const insert = seed.prepare('INSERT INTO sessions VALUES (?, ?, ?, ?)')
const ids = Array.from({ length: N }, () => randomBytes(16).toString('hex')).sort()
seed.transaction(() => ids.forEach((id, i) => insert.run(id, hash(i), 1e12 + i, 0)))()
seed.pragma('wal_checkpoint(TRUNCATE)')
seed.close()

// The service's writing connection, as db/database.ts opens it.
const writer = new SQLite(path)
writer.pragma('journal_mode = WAL')
writer.pragma('synchronous = NORMAL')
writer.pragma('wal_autocheckpoint = 10000')
const touch = writer.prepare(
  'UPDATE sessions SET expires_at = expires_at + 1, touched_at = ? WHERE id = ?',
)

function trial(label: string, on: 'reader' | 'writer', mapBytes: number, writes: boolean): void {
  const reader = new SQLite(path, { readonly: true })
  reader.pragma(`mmap_size = ${on === 'reader' ? mapBytes : 0}`)
  writer.pragma(`mmap_size = ${on === 'writer' ? mapBytes : 67_108_864}`)
  const lookup = (on === 'reader' ? reader : writer).prepare(
    'SELECT id, expires_at FROM sessions WHERE key_hash = (SELECT ?)',
  )
  const keys = Array.from({ length: READS }, () => hash(Math.floor(Math.random() * N)))
  for (let i = 0; i < 2000; i += 1) lookup.get(keys[i])
  let writeNs = 0n
  const started = process.hrtime.bigint()
  for (let i = 0; i < READS; i += 1) {
    if (writes && i % WRITE_EVERY === 0) {
      const before = process.hrtime.bigint()
      touch.run(Date.now(), ids[(i * 7919) % N])
      writeNs += process.hrtime.bigint() - before
    }
    lookup.get(keys[i])
  }
  const perRequest = Number(process.hrtime.bigint() - started) / READS / 1000
  const perWrite = writes ? Number(writeNs) / (READS / WRITE_EVERY) / 1000 : null
  console.log(
    `${label.padEnd(52)} ${perRequest.toFixed(1).padStart(6)} µs a lookup` +
      (perWrite === null ? '' : ` (the UPDATE itself ${perWrite.toFixed(0)} µs)`),
  )
  reader.close()
}

try {
  for (let repetition = 1; repetition <= 2; repetition += 1) {
    console.log(
      `${N} sessions, repetition ${repetition}; "+ writes": one UPDATE per ${WRITE_EVERY} lookups`,
    )
    trial('read-only connection, map 1 GiB', 'reader', 1 << 30, false)
    trial('read-only connection, map 1 GiB, + writes', 'reader', 1 << 30, true)
    trial('read-only connection, map 64 MiB, + writes', 'reader', 64 << 20, true)
    trial('read-only connection, no map, + writes', 'reader', 0, true)
    trial('writing connection, map 1 GiB', 'writer', 1 << 30, false)
    trial('writing connection, map 1 GiB, + writes', 'writer', 1 << 30, true)
    trial('writing connection, map 64 MiB, + writes', 'writer', 64 << 20, true)
  }
} finally {
  writer.close()
  rmSync(dir, { recursive: true, force: true })
}
