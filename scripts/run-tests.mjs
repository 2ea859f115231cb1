// The test suite: unit tests once, the HTTP suite on SQLite and on PostgreSQL, and the
// multi-instance tests on PostgreSQL + Redis, the browser tests in Chromium when it is
// installed, and the kits of packages/ on SQLite and on PostgreSQL. `--sqlite` leaves out the
// PostgreSQL and Redis passes.
// File name fragments as arguments narrow every pass to matching files.
// Files run side by side, one a core and at most two (TEST_WORKERS), each file's output printed
// whole when it ends; the files of ALONE (below, each with why) run after them, one at a time.
// PostgreSQL comes from TEST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test),
// Redis from TEST_REDIS_URL (default redis://127.0.0.1:6379/9); when neither is set and nothing
// answers at the default address, a throwaway one is started for the run (test-services.mjs).
// What cannot be had is left out with one line saying so; with CI=true it fails the run instead.
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { judge, runFile } from './test-file-runner.mjs'
import { provideServices } from './test-services.mjs'

const args = process.argv.slice(2)
const sqliteOnly = args.includes('--sqlite')
const only = args.filter((arg) => !arg.startsWith('--'))
const ci = process.env.CI === 'true'

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
// The kits (packages/*/test) and the examples (the mini-program, the forum, the whole app)
// against the running campusgate, on SQLite and unless --sqlite on PostgreSQL. Their tests
// import the kits as apps do, from the build, so the kits are built first.
const kitFiles = [
  ...testFiles('packages/miniprogram/test'),
  ...testFiles('packages/node/test'),
  ...testFiles('examples/miniprogram/test'),
  ...testFiles('examples/forum/test'),
]
if (kitFiles.length > 0) {
  const built = spawnSync('npm', ['run', '--silent', 'build:kits'], { stdio: 'inherit' })
  if (built.status !== 0) process.exit(1)
  passes.push({ name: 'kits on SQLite', files: kitFiles, env: { DATABASE_URL: '' } })
}
/**
 * Kit files whose outcome no database can change, and why: they run in the SQLite pass alone.
 * Matched by path fragment.
 */
const DATABASE_BLIND = [
  ['packages/node/test/package-entry-points.', 'compiles and loads the built package'],
  ['packages/node/test/pack-install.', 'packs the kits and installs them into a new app'],
  ['/readme.', "compiles the README's code blocks"],
  ['/wire-contract.', "compares the kit's copy of the wire with the OpenAPI document"],
  [
    'packages/miniprogram/test/wait-for-tier.',
    "times the kit's polling of GET /session, whose answers the HTTP passes prove on both",
  ],
]
const kitPostgresFiles = sqliteOnly
  ? []
  : kitFiles.filter((file) => !DATABASE_BLIND.some(([fragment]) => file.includes(fragment)))
// Services are looked for (or started) only when a pass that needs them has files to run.
const postgresFiles = sqliteOnly ? [] : testFiles('test/http')
const scaleFiles = sqliteOnly ? [] : testFiles('test/scale')
const services =
  postgresFiles.length + scaleFiles.length + kitPostgresFiles.length > 0
    ? await provideServices()
    : { postgres: { url: null }, redis: { url: null }, stop: async () => undefined }
const stopServices = async () => {
  await services.stop().catch(() => undefined)
}
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => void stopServices().then(() => process.exit(130)))
}
const leftOut = []
const postgresUrl = services.postgres.url
const redisUrl = services.redis.url
if (postgresFiles.length > 0) {
  if (postgresUrl !== null) {
    passes.push({
      name: 'HTTP on PostgreSQL',
      files: postgresFiles,
      env: { DATABASE_URL: postgresUrl },
    })
  } else leftOut.push(`HTTP on PostgreSQL (PostgreSQL: ${services.postgres.why})`)
}
if (scaleFiles.length > 0) {
  if (postgresUrl !== null && redisUrl !== null) {
    passes.push({
      name: 'several instances on PostgreSQL + Redis',
      files: scaleFiles,
      env: { DATABASE_URL: postgresUrl, REDIS_URL: redisUrl },
    })
  } else {
    const missing = [
      postgresUrl === null ? `PostgreSQL: ${services.postgres.why}` : null,
      redisUrl === null ? `Redis: ${services.redis.why}` : null,
    ].filter((why) => why !== null)
    leftOut.push(`several instances on PostgreSQL + Redis (${missing.join('; ')})`)
  }
}
if (kitPostgresFiles.length > 0) {
  if (postgresUrl !== null) {
    passes.push({
      name: 'kits on PostgreSQL',
      files: kitPostgresFiles,
      env: { DATABASE_URL: postgresUrl },
    })
  } else leftOut.push(`kits on PostgreSQL (PostgreSQL: ${services.postgres.why})`)
}
if (leftOut.length > 0) {
  console.log(`${ci ? 'missing in CI, failing the run' : 'left out'}: ${leftOut.join('; ')}`)
}

/**
 * A file's own bound: the slowest takes about two minutes on a loaded machine. Beyond it the file
 * is killed with every process it started, so a hang fails the run in minutes, not at CI's limit.
 */
const FILE_TIMEOUT_MS = Number(process.env.TEST_FILE_TIMEOUT_MS ?? 10 * 60_000)

/**
 * How long a file's process may stay once its summary is printed (every test ended): longer,
 * and something it left open holds it (test-file-runner.mjs), so it is killed and fails.
 */
const AFTER_SUMMARY_MS = Number(process.env.TEST_AFTER_SUMMARY_MS ?? 10_000)
const bounds = { timeoutMs: FILE_TIMEOUT_MS, afterSummaryMs: AFTER_SUMMARY_MS }

/**
 * Files that run with no other file beside them, and why: they time what they test, or load the
 * machine as a whole. Matched by path fragment. Every other file shares the machine with one more
 * (WORKERS), since each file's own database, ports and folders keep it apart from the others.
 */
const ALONE = [
  ['test/http/process-faults.', 'kills and restarts the service in the middle of load'],
  ['test/http/contention.', "races requests on one user against SQLite's busy timeout"],
  ['test/http/races.', 'counts on how concurrent requests interleave'],
  [
    'test/http/storage-faults.',
    'fills small disks and tablespaces, holds write faults for set times',
  ],
  ['test/http/database-faults.', 'loses the database and expects answers within seconds'],
  ['test/http/webhook-recovery.', 'SIGKILLs and restarts instances while deliveries are in flight'],
  ['test/browser/', 'Chromium, with its own processes, and waits on what a page shows'],
  ['packages/node/test/pack-install.', "rebuilds the kits' dist/ that the other kit files load"],
  ['test/scale/', 'several instances and their pools on one PostgreSQL and Redis'],
  ['packages/miniprogram/test/wait-for-tier.', 'times its polling and an abort to the 100 ms'],
  ['packages/miniprogram/test/rate-limit.', 'times a wait for Retry-After'],
  ['packages/node/test/guards.', "times the guard's answer against its timeout"],
  ['packages/node/test/check-failures.', 'times an answer that must not wait for the timeout'],
]
const aloneBecause = (file) => ALONE.find(([fragment]) => file.includes(fragment))?.[1] ?? null

/** How many files run at once: one a core, at most two (TEST_WORKERS overrides). */
const WORKERS = Math.max(1, Number(process.env.TEST_WORKERS ?? Math.min(2, availableParallelism())))

/**
 * Runs one file of a pass and prints its output whole once it ends, so that files running side
 * by side never interleave. A file that hangs is run once more: Node 20's module-loader thread
 * (which tsx uses) can deadlock the main thread at an import (nodejs/node#50948); a file that
 * hangs twice, or fails, counts as failed; so does one that does not exit within AFTER_SUMMARY_MS of
 * its summary (not run again: its tests ended). The counts are read from the spec reporter's summary.
 */
async function runJob({ pass, file }) {
  const started = Date.now()
  let result = await runFile(file, pass.env, bounds)
  const notes = []
  if (result.hung) {
    notes.push(`${file}: no end within ${FILE_TIMEOUT_MS / 1000} s, killed; ran it again`)
    result = await runFile(file, pass.env, bounds)
    if (result.hung) notes.push(`${file}: hung again, killed after ${FILE_TIMEOUT_MS / 1000} s`)
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1)
  const { passed, failed, notes: more } = judge(file, result, bounds)
  notes.push(...more)
  process.stdout.write(`\n=== ${pass.name}: ${file} (${seconds} s)\n\n${result.stdout}`)
  process.stderr.write(result.stderr)
  if (notes.length > 0) console.log(notes.join('\n'))
  return { passed, failed }
}

/**
 * The files that take longest (a minute or near it; from CI's logs), started first so that the
 * two workers end close together instead of one waiting out a long file at the end.
 */
const LONGEST_FIRST = [
  'test/http/cli.',
  'packages/node/test/package-entry-points.',
  'test/http/import-original.',
  'test/http/generated-requests.',
  'test/http/error-vocabulary.',
  'test/http/start.',
  'test/http/backups.',
  'test/unit/encryption.',
  'test/http/provider-faults.',
  'test/http/openapi-proxy.',
]
const rank = (job) => {
  const place = LONGEST_FIRST.findIndex((fragment) => job.file.includes(fragment))
  return place === -1 ? LONGEST_FIRST.length : place
}
const jobs = passes.flatMap((pass) => pass.files.map((file) => ({ pass, file })))
const shared = jobs
  .filter((job) => aloneBecause(job.file) === null)
  // A stable sort: files of the same rank keep their pass's order.
  .sort((a, b) => rank(a) - rank(b))
const alone = jobs.filter((job) => aloneBecause(job.file) !== null)
for (const pass of passes) {
  if (pass.files.length > 0) console.log(`${pass.name}: ${pass.files.length} files`)
}
console.log(
  `side by side, ${WORKERS} at a time: ${shared.length} files; then alone: ${alone.length}` +
    alone.map((job) => `\n  ${job.pass.name}: ${job.file} (${aloneBecause(job.file)})`).join(''),
)

let passed = 0
// In CI every pass runs: one that could not is a failure.
let failed = ci ? leftOut.length : 0
const tally = (counts) => {
  passed += counts.passed
  failed += counts.failed
}
const startedAt = Date.now()
try {
  let next = 0
  const worker = async () => {
    while (next < shared.length) tally(await runJob(shared[(next += 1) - 1]))
  }
  await Promise.all(Array.from({ length: Math.min(WORKERS, shared.length) }, worker))
  for (const job of alone) tally(await runJob(job))
} finally {
  await stopServices()
}
const minutes = ((Date.now() - startedAt) / 60_000).toFixed(1)
console.log(`\n${jobs.length} files in ${minutes} min`)
console.log(`\n${passed} passed, ${failed} failed`)
process.exit(failed === 0 ? 0 : 1)
