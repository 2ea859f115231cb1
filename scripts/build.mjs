// Compiles src/ to dist/, what `npm start` and the campusgate command run: esbuild transpiles each
// file on its own (same folders, ES2022 modules, source maps) in about a second, where tsc took ten
// of a newcomer's `npm ci` (`prepare`). The types are checked by `npm run check` (tsc), not here.
import { execFileSync } from 'node:child_process'
import { readdirSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { build } from 'esbuild'

function sources(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sources(path)
    return path.endsWith('.ts') && !path.endsWith('.d.ts') ? [path] : []
  })
}

await build({
  entryPoints: sources('src'),
  outdir: 'dist',
  outbase: 'src',
  platform: 'node',
  format: 'esm',
  target: 'es2022',
  sourcemap: true,
  logLevel: 'warning',
})

// The commit the build is of, for campusgate_build_info (src/operations/build-info.ts): REVISION when given
// (a build outside a checkout), else the checkout's HEAD.
function revision() {
  if (process.env.REVISION) return process.env.REVISION
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim()
  } catch {
    return 'unknown'
  }
}
writeFileSync('dist/build-info.json', `${JSON.stringify({ revision: revision() })}\n`)
