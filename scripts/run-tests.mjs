// The test suite: unit tests once, the HTTP suite on SQLite and on PostgreSQL, and the
// multi-instance tests on PostgreSQL + Redis, the browser tests in Chromium when it is
// installed, and the kits of packages/ on SQLite and on PostgreSQL. `--sqlite` leaves out the
// PostgreSQL and Redis passes.
// File name fragments as arguments narrow every pass to matching files.
// PostgreSQL comes from TEST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test),
// Redis from TEST_REDIS_URL (default redis://127.0.0.1:6379/9).
import { spawn, spawnSync } from 'node:child_process'
import { clearTimeout, setTimeout } from 'node:timers'
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

// The kits (packages/*/test) against the running campusgate, on SQLite and unless --sqlite on
// PostgreSQL. Their tests import the kits as apps do, from the build, so the kits are built first.
const kitFiles = [...testFiles('packages/miniprogram/test'), ...testFiles('packages/node/test')]
if (kitFiles.length > 0) {
  const built = spawnSync('npm', ['run', '--silent', 'build:kits'], { stdio: 'inherit' })
  if (built.status !== 0) process.exit(1)
  passes.push({ name: 'kits on SQLite', files: kitFiles, env: { DATABASE_URL: '' } })
  if (!sqliteOnly) {
    passes.push({ name: 'kits on PostgreSQL', files: kitFiles, env: { DATABASE_URL: postgresUrl } })
  }
}

/**
 * A file's own bound: the slowest takes about two minutes on a loaded machine. Beyond it the file
 * is killed with every process it started, so a hang fails the run in minutes, not at CI's limit.
 */
const FILE_TIMEOUT_MS = Number(process.env.TEST_FILE_TIMEOUT_MS ?? 10 * 60_000)

/** Runs one test file in its own process group; resolves with its output and whether it hung. */
function runFile(file, env) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--test-reporter=spec', file], {
      env: { ...process.env, ...env },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk) => (stdout += chunk))
    child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk))
    let hung = false
    const timer = setTimeout(() => {
      hung = true
      try {
        process.kill(-child.pid, 'SIGKILL')
      } catch {
        // Already gone.
      }
    }, FILE_TIMEOUT_MS)
    child.on('close', (status) => {
      clearTimeout(timer)
      resolve({ stdout, stderr, status, hung })
    })
  })
}

const count = (text, label) => Number(new RegExp(`^ℹ ${label} (\\d+)$`, 'm').exec(text)?.[1] ?? 0)

/**
 * Runs one pass file by file, echoing each file's output, and reads the counts from the spec
 * reporter's summary. A file that hangs is run once more: Node 20's module-loader thread (which
 * tsx uses) can deadlock the main thread at an import (nodejs/node#50948); a file that hangs
 * twice, or fails, counts as failed.
 */
async function run(pass) {
  let passed = 0
  let failed = 0
  for (const file of pass.files) {
    let result = await runFile(file, pass.env)
    if (result.hung) {
      console.log(`${file}: no end within ${FILE_TIMEOUT_MS / 1000} s, killed; running it again`)
      result = await runFile(file, pass.env)
    }
    process.stdout.write(result.stdout)
    process.stderr.write(result.stderr)
    if (result.hung) console.log(`${file}: hung again, killed after ${FILE_TIMEOUT_MS / 1000} s`)
    passed += count(result.stdout, 'pass')
    // A crashed or hung file (no summary, or a non-zero exit) counts as one failure at least.
    failed += count(result.stdout, 'fail') || (result.status === 0 && !result.hung ? 0 : 1)
  }
  return { passed, failed }
}

let passed = 0
let failed = 0
for (const pass of passes) {
  if (pass.files.length === 0) continue
  console.log(`\n=== ${pass.name} (${pass.files.length} files)\n`)
  const counts = await run(pass)
  passed += counts.passed
  failed += counts.failed
}
console.log(`\n${passed} passed, ${failed} failed`)
process.exit(failed === 0 ? 0 : 1)
