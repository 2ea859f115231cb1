import assert from 'node:assert/strict'
import { test } from 'node:test'
import { selfTimes, type CpuProfile } from '../../bench/harness/cpu-profile.js'

// bench/hook-costs.ts reads the profiles of servers the bench stops between their turns.

const frame = (id: number, functionName: string) => ({
  id,
  callFrame: { functionName, url: '', lineNumber: 0 },
})

test('a pause (SIGSTOP) is not charged to the frame that runs when the server resumes', () => {
  const profile: CpuProfile = {
    nodes: [frame(1, 'lookup'), frame(2, 'log')],
    // One sample a millisecond, and one that arrives after a stop of three seconds.
    samples: [1, 2, 1, 2, 1, 1, 2],
    timeDeltas: [1000, 1000, 1000, 1000, 1000, 3_000_000, 1000],
  }
  const { self, paused } = selfTimes(profile)
  assert.equal(self.get(1), 3000)
  assert.equal(self.get(2), 3000)
  assert.equal(paused, 3_000_000)
})

test('uneven sampling within the usual range counts whole', () => {
  const profile: CpuProfile = {
    nodes: [frame(1, 'lookup')],
    samples: [1, 1, 1, 1],
    timeDeltas: [900, 1100, 4000, 1000],
  }
  assert.deepEqual(selfTimes(profile), { self: new Map([[1, 7000]]), paused: 0 })
})
