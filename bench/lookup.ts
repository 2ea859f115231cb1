// npm run bench:lookup: the key check's SELECT alone, its text as this build's dist/ compiles it,
// in a tight loop, on the same keys in campusgate's schema (as its migrations make it) and in the
// key-check schema of the bench's baseline (seed.ts `seedKeyCheckSqlite`), with and without
// ANALYZE's statistics. SHA-256 of the key is included, as on a request. Prints µs per lookup: the
// median of 5 rounds of 20,000.
// Environment: LOOKUP_SIZES (comma-separated session counts, default 10000,1000000).
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import SQLite from 'better-sqlite3'
import { loadDist, loadKeyCheckStatements } from './harness/dist.js'
import { keyOf, saltFor, seedKeyCheckSqlite, seedSqlite } from './harness/seed.js'

const dist = await loadDist()
const { rows: statements } = await loadKeyCheckStatements()
const sizes = (process.env.LOOKUP_SIZES ?? '10000,1000000').split(',').map(Number)
const ROUNDS = 5
const LOOKUPS = 20_000

// Campusgate's key check as the service compiles it for SQLite, ending with the key `(SELECT ?)`.
const compiler = dist.database.createDb('sqlite::memory:', { poolSize: 1 })
const CAMPUSGATE_JOIN = statements.sessionByKeyHash
  .bind(compiler.kysely, '')
  .sql.replace(/\(SELECT \?\)$/, '')
await compiler.kysely.destroy()
if (!CAMPUSGATE_JOIN.endsWith('= ')) throw new Error('the key check no longer ends with (SELECT ?)')
const KEYCHECK_JOIN = `SELECT s.user_id, s.expires_at, s.touched_at, u.open_id,
  u.university_linked_at FROM sessions s INNER JOIN users u ON u.id = s.user_id WHERE s.key_hash = `

/** A read-only connection as campusgate's key check reader opens it (a 1 GiB memory map). */
function reader(path: string): SQLite.Database {
  const db = new SQLite(path, { readonly: true })
  db.pragma('mmap_size = 1073741824')
  return db
}

function withoutStatistics(path: string, copy: string): string {
  copyFileSync(path, copy)
  const db = new SQLite(copy)
  db.exec('DROP TABLE IF EXISTS sqlite_stat1; DROP TABLE IF EXISTS sqlite_stat4')
  db.close()
  return copy
}

/** µs per lookup of each variant: rounds interleaved, so a slow spell of the machine hits all. */
function measure(lookups: ((key: string) => unknown)[], size: number, salt: string): number[] {
  const times = lookups.map((): number[] => [])
  for (let round = 0; round <= ROUNDS; round += 1) {
    lookups.forEach((lookup, v) => {
      const started = process.hrtime.bigint()
      for (let i = 0; i < LOOKUPS; i += 1) {
        // A stride coprime to the size: every lookup a different key, as in the HTTP bench.
        if (lookup(keyOf({ salt }, (i * 7919 + round * 104_729) % size)) === undefined) {
          throw new Error('a seeded key was not found')
        }
      }
      if (round > 0) times[v].push(Number(process.hrtime.bigint() - started) / LOOKUPS / 1000)
    })
  }
  return times.map((t) => t.sort((a, b) => a - b)[Math.floor(t.length / 2)])
}

const dir = mkdtempSync(join(tmpdir(), 'campusgate-lookup-'))
try {
  const rows: Record<string, string>[] = []
  for (const size of sizes) {
    const dataset = { name: `lookup${size}`, size, salt: saltFor(`lookup${size}`), dueTouch: false }
    const analysed = join(dir, `campusgate-${size}.db`)
    await seedSqlite(dist, analysed, dataset) // ends with ANALYZE, as the HTTP bench's
    const plain = withoutStatistics(analysed, join(dir, `campusgate-${size}-plain.db`))
    const keycheck = join(dir, `keycheck-${size}.db`)
    seedKeyCheckSqlite(dist, keycheck, dataset)
    const hex = (key: string): string => dist.secrets.hashSecret(key)
    const blob = (key: string): Buffer => Buffer.from(dist.secrets.hashSecret(key), 'hex')
    const variants: [string, string, string, (key: string) => unknown][] = [
      ['campusgate schema, key as a bare parameter', 'ANALYZE', analysed, hex],
      ['campusgate schema, key as (SELECT ?)', 'ANALYZE', analysed, hex],
      ['campusgate schema, key as a bare parameter', 'none', plain, hex],
      ['campusgate schema, key as (SELECT ?)', 'none', plain, hex],
      ['key-check schema, key as a bare parameter', 'none', keycheck, blob],
    ]
    const opened = variants.map(([label, , path, hashOf]) => {
      const db = reader(path)
      const base = label.startsWith('key-check') ? KEYCHECK_JOIN : CAMPUSGATE_JOIN
      const statement = db.prepare(`${base}${label.endsWith('(SELECT ?)') ? '(SELECT ?)' : '?'}`)
      return { db, lookup: (key: string) => statement.get(hashOf(key)) }
    })
    const us = measure(
      opened.map((o) => o.lookup),
      size,
      dataset.salt,
    )
    opened.forEach((o) => o.db.close())
    variants.forEach(([label, statistics], v) => {
      rows.push({
        sessions: size.toLocaleString('en'),
        query: label,
        statistics,
        'µs per lookup': us[v].toFixed(1),
      })
    })
  }
  console.table(rows)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
