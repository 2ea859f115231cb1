// Runs the test suite: unit tests once, HTTP tests against SQLite and (unless --sqlite) PostgreSQL.
// The PostgreSQL run uses TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test).
import { spawnSync } from 'node:child_process'
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

function testFiles(dir) {
  return readdirSync(dir)
    .flatMap((name) => {
      const path = join(dir, name)
      return statSync(path).isDirectory()
        ? testFiles(path)
        : path.endsWith('.test.ts')
          ? [path]
          : []
    })
    .sort()
}

const files = testFiles('test')
const only = process.argv.slice(2).filter((arg) => !arg.startsWith('--'))
const selected = only.length > 0 ? files.filter((f) => only.some((o) => f.includes(o))) : files

const result = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-concurrency=2', ...selected],
  {
    stdio: 'inherit',
    env: {
      ...process.env,
      CAMPUSGATE_TEST_DIALECTS: process.argv.includes('--sqlite')
        ? 'sqlite'
        : (process.env.CAMPUSGATE_TEST_DIALECTS ?? 'sqlite'),
    },
  },
)
process.exit(result.status ?? 1)
