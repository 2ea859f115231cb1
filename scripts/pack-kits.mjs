// npm run pack:kits [DIR]: the two kits as npm tarballs (campusgate-miniprogram-<version>.tgz and
// campusgate-node-<version>.tgz, built by their prepack, with their types) in DIR (default kits/),
// for an app to install without a registry: `npm install ./kits/campusgate-node-1.0.0.tgz`.
import { spawnSync } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { resolve } from 'node:path'

const destination = resolve(process.argv[2] ?? 'kits')
mkdirSync(destination, { recursive: true })
const packed = spawnSync(
  'npm',
  [
    'pack',
    '--workspace=packages/miniprogram',
    '--workspace=packages/node',
    `--pack-destination=${destination}`,
    '--json',
  ],
  { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
)
if (packed.status !== 0) {
  console.error(packed.stdout)
  process.exit(packed.status ?? 1)
}
// npm prints what the kits' prepack builds print before its JSON.
const json = packed.stdout.slice(packed.stdout.indexOf('\n[') + 1)
for (const { filename, files } of JSON.parse(json)) {
  console.log(`${resolve(destination, filename)} (${files.length} files)`)
}
