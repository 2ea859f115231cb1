import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { resolve } from 'node:path'
import { describe, it } from 'node:test'

const REQUEST_LOG = resolve('src/http/request-log.ts')
const TSX = import.meta.resolve('tsx')
const LINES = 500

describe('the service log', () => {
  it('is written as each line is logged: a process killed right after logging loses no line', () => {
    // The child logs a burst through the service's logger, then is killed before its event loop
    // turns again: whatever a buffer or a pool thread still held would be lost.
    const script = `
      import Fastify from 'fastify'
      import { requestLogging } from ${JSON.stringify(REQUEST_LOG)}
      const app = Fastify(requestLogging('info'))
      for (let i = 0; i < ${LINES}; i += 1) app.log.info({ i }, 'line')
      process.kill(process.pid, 'SIGKILL')
    `
    const child = spawnSync(
      process.execPath,
      ['--import', TSX, '--input-type=module', '--eval', script],
      { encoding: 'utf8', timeout: 30_000 },
    )
    assert.equal(child.signal, 'SIGKILL', child.stderr)
    const logged = child.stdout
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => (JSON.parse(line) as { i: number }).i)
    assert.deepEqual(
      logged,
      Array.from({ length: LINES }, (_, i) => i),
    )
  })
})
