import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { describe, it } from 'node:test'
import { readBuildInfo } from '../../src/operations/build-info.js'

describe('the build info campusgate_build_info reports', () => {
  it("is the package's version and the revision the build wrote, unknown when none was", () => {
    const dir = mkdtempSync(join(tmpdir(), 'campusgate-build-info-'))
    try {
      const pkg = join(dir, 'package.json')
      const info = join(dir, 'build-info.json')
      writeFileSync(pkg, JSON.stringify({ name: 'campusgate', version: '2.3.4' }))
      assert.deepEqual(readBuildInfo(pathToFileURL(pkg), pathToFileURL(info)), {
        version: '2.3.4',
        revision: 'unknown',
      })
      writeFileSync(info, JSON.stringify({ revision: 'a1b2c3d' }))
      assert.deepEqual(readBuildInfo(pathToFileURL(pkg), pathToFileURL(info)), {
        version: '2.3.4',
        revision: 'a1b2c3d',
      })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
