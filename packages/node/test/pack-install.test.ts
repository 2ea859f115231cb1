// Both kits as an app installs them without a registry (the READMEs' "Install"): `npm run
// pack:kits` makes the tarballs, a new app installs them, and its CommonJS and ES module code
// checks a key against the running campusgate, as the README's example does.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { after, before, describe, it } from 'node:test'
import { startService, type RunningService } from '../../../test/helpers/service.js'
import { registerUser } from './apps.js'

const run = promisify(execFile)
const root = fileURLToPath(new URL('../../../', import.meta.url))

/** What each module system's app prints: the session of the key it was given, and the kits' names. */
const CHECK = `
  const [baseUrl, key] = process.argv.slice(2)
  const client = createClient({ baseUrl })
  client.session(key).then(async (session) => {
    await client.close()
    console.log(JSON.stringify({ session, tiers: TIERS, kit: typeof createCampusgate, media: MEDIA_TYPE }))
  })
`
const COMMONJS = `
const { createClient, TIERS } = require('campusgate-node')
const { createCampusgate, MEDIA_TYPE } = require('campusgate-miniprogram')
${CHECK}`
const ES_MODULE = `
import { createClient, TIERS } from 'campusgate-node'
import { createCampusgate, MEDIA_TYPE } from 'campusgate-miniprogram'
${CHECK}`

describe('the kits packed and installed into a new app, with no registry for them', () => {
  let service: RunningService
  let work: string
  let app: string
  before(async () => {
    service = await startService()
    work = await mkdtemp(join(tmpdir(), 'campusgate-kits-'))
    app = join(work, 'app')
  })
  after(async () => {
    await service?.close()
    await rm(work, { recursive: true, force: true })
  })

  it('npm run pack:kits writes both tarballs, and npm install takes them', async () => {
    const packs = join(work, 'packs')
    await run('npm', ['run', '--silent', 'pack:kits', '--', packs], {
      cwd: root,
      timeout: 180_000,
    })
    const tarballs = (await readdir(packs)).sort()
    assert.equal(tarballs.length, 2, tarballs.join(', '))
    assert.match(tarballs[0], /^campusgate-miniprogram-\d+\.\d+\.\d+\.tgz$/)
    assert.match(tarballs[1], /^campusgate-node-\d+\.\d+\.\d+\.tgz$/)
    const listed = await run('tar', ['-tzf', join(packs, tarballs[1])])
    assert.match(listed.stdout, /package\/dist\/index\.d\.ts/)
    assert.match(listed.stdout, /package\/README\.md/)

    await run('mkdir', ['-p', app])
    await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'an-app', private: true }))
    // Their own dependencies come from the registry or npm's cache, as for any package.
    await run(
      'npm',
      [
        'install',
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        ...tarballs.map((name) => join(packs, name)),
      ],
      { cwd: app, timeout: 180_000 },
    )
  })

  for (const [system, file, source] of [
    ['CommonJS', 'check.cjs', COMMONJS],
    ['an ES module', 'check.mjs', ES_MODULE],
  ] as const) {
    it(`checks a key from ${system}, as the README's example does`, async () => {
      const { key, openId } = await registerUser(service)
      await writeFile(join(app, file), source)
      const { stdout } = await run('node', [file, service.url, key], {
        cwd: app,
        timeout: 30_000,
      })
      const printed = JSON.parse(stdout) as {
        session: { openId: string; tier: string }
        tiers: string[]
        kit: string
        media: string
      }
      assert.equal(printed.session.openId, openId)
      assert.equal(printed.session.tier, 'messenger-registered')
      assert.deepEqual(printed.tiers, ['messenger-registered', 'university-registered'])
      assert.equal(printed.kit, 'function')
      assert.equal(printed.media, 'application/vnd.service.v1+json')
    })
  }
})
