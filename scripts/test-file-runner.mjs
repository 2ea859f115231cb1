// One test file of scripts/run-tests.mjs in its own process, and what its run counts for.
import { spawn } from 'node:child_process'
import { clearTimeout, setTimeout } from 'node:timers'

/** The last line of node's test summary (spec reporter): every test of the file has ended. */
const SUMMARY_END = /^ℹ duration_ms [\d.]+$/m

/**
 * Runs one test file in its own process group; resolves with its output and how it ended. A file
 * that runs past `timeoutMs` is killed with every process it started (`hung`). A file whose
 * tests have all ended (its summary printed) but whose process is still there `afterSummaryMs`
 * later left something open (a server, a timer, a pool): it is killed then (`lingered`), not
 * waited on until `timeoutMs`.
 */
export function runFile(file, env, { timeoutMs, afterSummaryMs }) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--test-reporter=spec', file], {
      env: { ...process.env, ...env },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    let hung = false
    let lingered = false
    let afterSummary = null
    const kill = () => {
      try {
        process.kill(-child.pid, 'SIGKILL')
      } catch {
        // Already gone.
      }
    }
    child.stdout.setEncoding('utf8').on('data', (chunk) => {
      stdout += chunk
      if (afterSummary === null && SUMMARY_END.test(stdout)) {
        afterSummary = setTimeout(() => {
          lingered = true
          kill()
        }, afterSummaryMs)
      }
    })
    child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk))
    const timer = setTimeout(() => {
      hung = true
      kill()
    }, timeoutMs)
    child.on('close', (status) => {
      clearTimeout(timer)
      if (afterSummary !== null) clearTimeout(afterSummary)
      resolve({ stdout, stderr, status, hung, lingered })
    })
  })
}

/** A count of the spec reporter's summary (`ℹ pass 3`); 0 when there is none. */
export const count = (text, label) =>
  Number(new RegExp(`^ℹ ${label} (\\d+)$`, 'm').exec(text)?.[1] ?? 0)

/**
 * What a run of `file` counts for: its passed and failed tests, and a line for the output when
 * it did not end by itself. A crashed, hung or lingering file counts as one failure at least: a
 * file that leaves a handle open would hold up whoever runs it next (`node --test`, an editor).
 */
export function judge(file, result, { afterSummaryMs }) {
  const notes = []
  if (result.lingered) {
    notes.push(
      `${file}: all its tests ended, but its process had not exited ${afterSummaryMs / 1000} s ` +
        'after the summary (something left open: a server, a timer, a pool); killed, counted as a failure',
    )
  }
  const clean = result.status === 0 && !result.hung && !result.lingered
  return {
    passed: count(result.stdout, 'pass'),
    failed: count(result.stdout, 'fail') || (clean ? 0 : 1),
    notes,
  }
}
