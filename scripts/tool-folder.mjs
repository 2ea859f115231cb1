// What only one check or one test needs (Taro's typings for packages/miniprogram/typecheck/taro.ts,
// Stoplight Prism for test/http/openapi-proxy.test.ts) lives in a folder of its own, with its own
// package.json and package-lock.json, so that the project's `npm ci` does not install it. The check
// or test that needs it calls `ensureToolFolder` first: the folder is installed from its lock file
// on first use, and again whenever the lock file changes. A failed install fails the check or the
// test (nothing is skipped). The folder's own .npmrc may narrow the install (omit=peer).
//
//   node scripts/tool-folder.mjs FOLDER...
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
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
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === digest) return dir
  process.stderr.write(`installing ${folder} from its package-lock.json (first use)\n`)
  const installed = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--ignore-scripts'], {
    cwd: dir,
    encoding: 'utf8',
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  if (installed.status !== 0) {
    const why = (installed.stderr ?? installed.error?.message ?? '').trim()
    throw new Error(`npm ci in ${folder} failed:\n${why}`)
  }
  mkdirSync(join(dir, 'node_modules'), { recursive: true })
  writeFileSync(stamp, digest)
  return dir
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    for (const folder of process.argv.slice(2)) ensureToolFolder(folder)
  } catch (error) {
    console.error(error instanceof Error ? error.message : error)
    process.exit(1)
  }
}
