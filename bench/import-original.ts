// How long `campusgate import-original` takes: a table of the original server's with ROWS live
// users (default 10,000) on the machine's MariaDB, imported by the built command (dist/) into a
// fresh campusgate database: SQLite, or a fresh schema of DATABASE_URL's PostgreSQL. Prints the
// wall time of the command, then drops what it made. docs/migrating-from-original.md has the
// figures it gave.
//   npm run build && npx tsx bench/import-original.ts [rows]
//   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test npx tsx bench/import-original.ts
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { resolve } from 'node:path'
import { createConnection } from 'mysql2/promise'
import { freshDatabase } from '../test/helpers/database.js'

const rows = Number(process.argv[2] ?? 10_000)
const BIN = resolve('bin/campusgate.js')
const name = `cg_bench_original_${process.pid}`
const admin = await createConnection({ host: '127.0.0.1', port: 3306, user: 'root' })
await admin.query(`CREATE DATABASE ${name}`)
await admin.query(`USE ${name}`)
const database = await freshDatabase()
try {
  await admin.query(`CREATE TABLE UserSessions (
    UclcssaSessionKey CHAR(64) NOT NULL DEFAULT '',
    CreationDatetime DATETIME NOT NULL DEFAULT NOW(),
    LastUsed DATETIME NOT NULL DEFAULT NOW(),
    WechatOpenId CHAR(64) NOT NULL DEFAULT '',
    WechatSessionKey CHAR(64) NOT NULL DEFAULT '',
    UclapiToken CHAR(64) NOT NULL DEFAULT '',
    PRIMARY KEY (WechatOpenId))`)
  const lastUsed = new Date(Date.now() - 86_400_000).toISOString().slice(0, 19).replace('T', ' ')
  for (let i = 0; i < rows; i += 1000) {
    const values = []
    for (let j = i; j < Math.min(rows, i + 1000); j += 1) {
      values.push([
        `oBench${randomBytes(11).toString('base64url')}`.padStart(64, ' '),
        randomBytes(32).toString('hex'),
        lastUsed,
        randomBytes(16).toString('base64'),
        '',
      ])
    }
    await admin.query(
      'INSERT INTO UserSessions (WechatOpenId, UclcssaSessionKey, LastUsed, WechatSessionKey, UclapiToken) VALUES ?',
      [values],
    )
  }
  const env = {
    PATH: process.env.PATH,
    DATABASE_URL: database.url,
    DATA_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  }
  const migrate = spawnSync(process.execPath, [BIN, 'migrate'], { env, encoding: 'utf8' })
  if (migrate.status !== 0) throw new Error(migrate.stderr)
  const from = `mysql://root@127.0.0.1:3306/${name}`
  const started = process.hrtime.bigint()
  const run = spawnSync(
    process.execPath,
    [BIN, 'import-original', '--from', from, '--timezone', 'Z', '--json'],
    { env, encoding: 'utf8' },
  )
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  if (run.status !== 0) throw new Error(run.stderr)
  const report = JSON.parse(run.stdout) as { imported: number }
  if (report.imported !== rows) throw new Error(`imported ${report.imported} of ${rows}`)
  const on = database.url.startsWith('sqlite:') ? 'SQLite' : 'PostgreSQL'
  console.log(`${rows} rows imported into ${on} in ${seconds.toFixed(2)} s (the whole command)`)
} finally {
  await admin.query(`DROP DATABASE ${name}`)
  await admin.end()
  await database.drop()
}
