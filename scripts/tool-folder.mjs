// What only one check or one test needs (Taro's typings for packages/miniprogram/typecheck/taro.ts,
// Stoplight Prism for test/http/openapi-proxy.test.ts) lives in a folder of its own, with its own
// package.json and package-lock.json, so that the project's `npm ci` does not install it. The check
// or test that needs it calls `ensureToolFolder` first: the folder is installed from its lock file
// on first use, and again whenever the lock file changes. A failed install fails the check or the
// test (nothing is skipped). The folder's own .npmrc may narrow the install (omit=peer). Processes
// that need one folder at once (the test runner's SQLite and PostgreSQL passes run side by side)
// install it one at a time: two `npm ci` in one folder remove each other's files.
//
//   node scripts/tool-folder.mjs FOLDER...
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = resolve(fileURLToPath(import.meta.url), '../..')

/**
 * Installs `folder` (relative to the project, or absolute) from its lock file unless that lock is
 * installed; returns the folder's absolute path.
 */
export function ensureToolFolder(folder) {
  const dir = resolve(ROOT, folder)
  const lock = readFileSync(join(dir, 'package-lock.json'))
  const digest = createHash('sha256').update(lock).digest('hex')
  // Written after a complete install: an interrupted one is installed again.
  const stamp = join(dir, 'node_modules', '.campusgate-lock-sha256')
  const installed = () => existsSync(stamp) && readFileSync(stamp, 'utf8') === digest
  if (installed()) return dir
  const release = holdInstallLock(dir, folder)
  try {
    // Another process may have installed it while this one waited.
    if (installed()) return dir
    process.stderr.write(`installing ${folder} from its package-lock.json (first use)\n`)
    const npm = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--ignore-scripts'], {
      cwd: dir,
      encoding: 'utf8',
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    if (npm.status !== 0) {
      const why = (npm.stderr ?? npm.error?.message ?? '').trim()
      throw new Error(`npm ci in ${folder} failed:\n${why}`)
    }
    mkdirSync(join(dir, 'node_modules'), { recursive: true })
    writeFileSync(stamp, digest)
    return dir
  } finally {
    release()
  }
}

/** The longest an install may hold a folder before a waiting process gives up. */
const INSTALL_WAIT_MS = 10 * 60_000

/**
 * Takes the folder's install lock (a directory, made atomically, naming its holder's pid) and
 * returns its release. A lock whose holder has died is taken over; one held longer than
 * INSTALL_WAIT_MS fails the caller.
 */
function holdInstallLock(dir, folder) {
  const lockDir = join(dir, '.install-lock')
  const owner = join(lockDir, 'pid')
  const giveUpAt = Date.now() + INSTALL_WAIT_MS
  for (;;) {
    try {
      mkdirSync(lockDir)
      writeFileSync(owner, String(process.pid))
      return () => rmSync(lockDir, { recursive: true, force: true })
    } catch (error) {
      if (error.code !== 'EEXIST') throw error
    }
    if (holderGone(lockDir, owner)) {
      rmSync(lockDir, { recursive: true, force: true })
      continue
    }
    if (Date.now() > giveUpAt) throw new Error(`${folder}: another install still holds ${lockDir}`)
    sleepSync(100)
  }
}

function holderGone(lockDir, owner) {
  let pid
  try {
    pid = Number(readFileSync(owner, 'utf8'))
  } catch {
    // Made but not yet named: give its maker a moment before calling it dead.
    try {
      return Date.now() - statSync(lockDir).mtimeMs > 5_000
    } catch {
      return false // released meanwhile
    }
  }
  try {
    process.kill(pid, 0)
    return false
  } catch (error) {
    return error.code === 'ESRCH'
  }
}

function sleepSync(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    for (const folder of process.argv.slice(2)) ensureToolFolder(folder)
  } catch (error) {
    console.error(error instanceof Error ? error.message : error)
    process.exit(1)
  }
}
