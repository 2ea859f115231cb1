import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { describe, it } from 'node:test'

// semver is the range logic npm itself uses (installed with the toolchain), so it decides as
// `npm ci` does.
const semver = createRequire(import.meta.url)('semver') as {
  satisfies(version: string, range: string): boolean
}

interface LockEntry {
  engines?: { node?: string }
}

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string } }
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as {
  packages: Record<string, LockEntry>
}

/** The first release of each supported line, where an engine range is most likely to miss. */
const LINES = ['20.19.0', '22.13.0', '24.0.0']

describe('supported Node.js lines', () => {
  it('engines names 20.19+, 22 and 24, and not 21 or 18', () => {
    for (const version of LINES) assert.ok(semver.satisfies(version, pkg.engines.node), version)
    for (const version of ['18.20.0', '20.18.0', '21.7.0'])
      assert.ok(!semver.satisfies(version, pkg.engines.node), version)
  })

  it('no installed package asks for a newer Node.js than a supported line (no install warning)', () => {
    const misfits: string[] = []
    for (const [path, entry] of Object.entries(lock.packages)) {
      const range = entry.engines?.node
      if (range === undefined) continue
      for (const version of LINES)
        if (!semver.satisfies(version, range)) misfits.push(`${path} (${range}) on ${version}`)
    }
    assert.deepEqual(misfits, [])
  })
})
