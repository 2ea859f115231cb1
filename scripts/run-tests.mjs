// The test suite: unit tests once, the HTTP suite on SQLite and on PostgreSQL, and the
// multi-instance tests on PostgreSQL + Redis, and the browser tests in Chromium when it is
// installed. `--sqlite` leaves out the PostgreSQL and Redis passes.
// File name fragments as arguments narrow every pass to matching files.
// PostgreSQL comes from TEST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test),
// Redis from TEST_REDIS_URL (default redis://127.0.0.1:6379/9).
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

const args = process.argv.slice(2)
const sqliteOnly = args.includes('--sqlite')
const only = args.filter((arg) => !arg.startsWith('--'))
const postgresUrl = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/9'

function testFiles(dir) {
  if (!existsSync(dir)) return []
  return readdirSync(dir)
    .flatMap((name) => {
      const path = join(dir, name)
      if (statSync(path).isDirectory()) return testFiles(path)
      return path.endsWith('.test.ts') ? [path] : []
    })
    .filter((file) => only.length === 0 || only.some((fragment) => file.includes(fragment)))
    .sort()
}

// The browser pass needs Chromium (Debian's package); without it, it is left out locally and
// fails in CI, where .ci/run installs it.
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
const browserPass = existsSync(chromiumPath) || process.env.CI === 'true'

const passes = [
  { name: 'unit', files: testFiles('test/unit'), env: {} },
  { name: 'HTTP on SQLite', files: testFiles('test/http'), env: { DATABASE_URL: '' } },
]
if (browserPass) {
  passes.push({
    name: 'browser (Chromium)',
    files: testFiles('test/browser'),
    env: { DATABASE_URL: '' },
  })
} else {
  console.log(
    `no Chromium at ${chromiumPath}: the browser tests are left out (apt-get install chromium)`,
  )
}
if (!sqliteOnly) {
  passes.push(
    {
      name: 'HTTP on PostgreSQL',
      files: testFiles('test/http'),
      env: { DATABASE_URL: postgresUrl },
    },
    {
      name: 'several instances on PostgreSQL + Redis',
      files: testFiles('test/scale'),
      env: { DATABASE_URL: postgresUrl, REDIS_URL: redisUrl },
    },
  )
}

/** Runs one pass, echoing its output, and reads the counts from the spec reporter's summary. */
function run(pass) {
  const result = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--test', '--test-reporter=spec', ...pass.files],
    { env: { ...process.env, ...pass.env }, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 },
  )
  process.stdout.write(result.stdout)
  process.stderr.write(result.stderr)
  const count = (label) =>
    Number(new RegExp(`^ℹ ${label} (\\d+)$`, 'm').exec(result.stdout)?.[1] ?? 0)
  const passed = count('pass')
  // A crashed run (no summary, non-zero exit) counts as one failure.
  const failed = count('fail') || (result.status === 0 ? 0 : 1)
  return { passed, failed }
}

let passed = 0
let failed = 0
for (const pass of passes) {
  if (pass.files.length === 0) continue
  console.log(`\n=== ${pass.name} (${pass.files.length} files)\n`)
  const counts = run(pass)
  passed += counts.passed
  failed += counts.failed
}
console.log(`\n${passed} passed, ${failed} failed`)
process.exit(failed === 0 ? 0 : 1)
