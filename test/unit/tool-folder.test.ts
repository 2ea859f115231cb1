import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { after, before, describe, it } from 'node:test'
import { ensureToolFolder } from '../../scripts/tool-folder.mjs'

// scripts/tool-folder.mjs: a folder with its own lock file, installed on first use (Taro's
// typings for npm run typecheck, Prism for the OpenAPI proxy test). A folder with no dependencies
// needs no registry, so these run offline.

describe('a tool folder, installed from its own lock file on first use', () => {
  let dir = ''
  const stamp = () => join(dir, 'node_modules', '.campusgate-lock-sha256')
  const lock = (extra = '') => ({
    name: 'tool',
    lockfileVersion: 3,
    requires: true,
    packages: { '': { name: 'tool', ...(extra === '' ? {} : { description: extra }) } },
  })
  const write = (manifest: object, lockfile: object) => {
    writeFileSync(join(dir, 'package.json'), JSON.stringify(manifest))
    writeFileSync(join(dir, 'package-lock.json'), JSON.stringify(lockfile))
  }

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'campusgate-tool-'))
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('installs once, and again only when its lock file changes', () => {
    write({ name: 'tool', private: true }, lock())
    assert.equal(ensureToolFolder(dir), dir)
    const first = statSync(stamp()).mtimeMs
    ensureToolFolder(dir)
    assert.equal(statSync(stamp()).mtimeMs, first, 'installed already: not again')

    write({ name: 'tool', private: true, description: 'changed' }, lock('changed'))
    const before = readFileSync(stamp(), 'utf8')
    ensureToolFolder(dir)
    assert.notEqual(readFileSync(stamp(), 'utf8'), before)
  })

  it("throws with npm's reason when the install fails, and installs again next time", () => {
    // A dependency the lock file does not hold: npm ci refuses.
    write({ name: 'tool', private: true, devDependencies: { 'left-pad': '1.3.0' } }, lock('x'))
    assert.throws(() => ensureToolFolder(dir), /npm ci in .* failed:[\s\S]*in sync/)
    write({ name: 'tool', private: true }, lock())
    ensureToolFolder(dir)
  })

  // The command line form, as a separate process: what the test runner's two passes amount to.
  const script = resolve(fileURLToPath(import.meta.url), '../../../scripts/tool-folder.mjs')
  const ensureInChild = () => {
    const child = spawn(process.execPath, [script, dir], { stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    return new Promise<{ code: number | null; stderr: string }>((resolve) =>
      child.on('close', (code) => resolve({ code, stderr })),
    )
  }
  const fresh = () => {
    rmSync(join(dir, 'node_modules'), { recursive: true, force: true })
    write({ name: 'tool', private: true }, lock(`fresh ${Math.random()}`))
  }

  it('installs once when several processes need it at the same time', async () => {
    fresh()
    const runs = await Promise.all([ensureInChild(), ensureInChild(), ensureInChild()])
    for (const run of runs) assert.equal(run.code, 0, run.stderr)
    const installs = runs.filter((run) => run.stderr.includes('installing')).length
    assert.equal(installs, 1, runs.map((run) => run.stderr).join('\n'))
  })

  it('waits while a live process holds the install, then uses what it installed', async () => {
    fresh()
    // This test's own process holds the lock, as an install in progress would.
    mkdirSync(join(dir, '.install-lock'))
    writeFileSync(join(dir, '.install-lock', 'pid'), String(process.pid))
    const waiting = ensureInChild()
    const early = await Promise.race([
      waiting.then(() => 'finished'),
      new Promise((resolve) => setTimeout(resolve, 1_000, 'waiting')),
    ])
    assert.equal(early, 'waiting', 'it installed beside the holder instead of waiting')
    // The holder finishes: the folder installed, the lock released.
    const digest = createHash('sha256')
      .update(readFileSync(join(dir, 'package-lock.json')))
      .digest('hex')
    mkdirSync(join(dir, 'node_modules'), { recursive: true })
    writeFileSync(stamp(), digest)
    rmSync(join(dir, '.install-lock'), { recursive: true })
    const after = await waiting
    assert.equal(after.code, 0, after.stderr)
    assert.doesNotMatch(after.stderr, /installing/)
  })

  it('takes over the lock of a process that died holding it', () => {
    fresh()
    const dead = spawnSync(process.execPath, ['-e', '']).pid
    mkdirSync(join(dir, '.install-lock'))
    writeFileSync(join(dir, '.install-lock', 'pid'), String(dead))
    assert.equal(ensureToolFolder(dir), dir)
    assert.equal(readFileSync(stamp(), 'utf8').length, 64)
  })
})
