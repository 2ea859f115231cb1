import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
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
})
