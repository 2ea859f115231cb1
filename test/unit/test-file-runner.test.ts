import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { judge, runFile } from '../../scripts/test-file-runner.mjs'

describe("the test runner's run of one file", () => {
  it('kills a file that printed its summary but never exits within seconds, and fails it naming the file', async () => {
    const file = 'test/fixtures/lingers-after-summary.ts'
    const started = Date.now()
    const result = await runFile(file, {}, { timeoutMs: 120_000, afterSummaryMs: 1000 })
    const seconds = (Date.now() - started) / 1000
    assert.ok(seconds < 30, `ended after ${seconds} s`)
    assert.equal(result.lingered, true)
    assert.equal(result.hung, false)
    assert.match(result.stdout, /^ℹ pass 1$/m)
    const verdict = judge(file, result, { afterSummaryMs: 1000 })
    assert.equal(verdict.passed, 1)
    assert.equal(verdict.failed, 1)
    assert.equal(verdict.notes.length, 1)
    assert.match(
      verdict.notes[0],
      /^test\/fixtures\/lingers-after-summary\.ts: all its tests ended, but its process had not exited 1 s after the summary/,
    )
  })

  it('lets a file that exits by itself pass, with no note', async () => {
    const file = 'test/fixtures/ends.ts'
    const result = await runFile(file, {}, { timeoutMs: 120_000, afterSummaryMs: 1000 })
    assert.equal(result.lingered, false)
    assert.equal(result.status, 0)
    assert.deepEqual(judge(file, result, { afterSummaryMs: 1000 }), {
      passed: 1,
      failed: 0,
      notes: [],
    })
  })
})
