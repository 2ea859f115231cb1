import { ABORTED, CampusgateError, TIMED_OUT } from './error.js'
import { TIERS, type Session, type Tier } from './wire.js'

/** The shortest pause between two polls, whatever `intervalMs` asks: campusgate rate-limits keys. */
export const MIN_POLL_INTERVAL_MS = 2000

/**
 * What the wait needs of an abort signal. `AbortController`'s signal fits; so does any object
 * with these members, for base libraries that have no AbortController.
 */
export interface WaitSignal {
  readonly aborted: boolean
  addEventListener(type: 'abort', listener: () => void): void
  removeEventListener(type: 'abort', listener: () => void): void
}

/**
 * A signal and its abort, for pages on base libraries without AbortController: abort it in
 * `onHide` to stop a wait when the user leaves the page.
 */
export function abortable(): { signal: WaitSignal; abort(): void } {
  const listeners = new Set<() => void>()
  const signal = {
    aborted: false,
    addEventListener: (_type: 'abort', listener: () => void) => void listeners.add(listener),
    removeEventListener: (_type: 'abort', listener: () => void) => void listeners.delete(listener),
  }
  return {
    signal,
    abort() {
      if (signal.aborted) return
      signal.aborted = true
      for (const listener of [...listeners]) listener()
      listeners.clear()
    },
  }
}

export interface WaitOptions {
  /** How long to wait in all, in milliseconds. */
  timeoutMs: number
  /** The pause between two polls; at least (and by default) 2000 ms. */
  intervalMs?: number
  /** Aborting it stops the wait at once (a page's `onHide`, `onUnload`). */
  signal?: WaitSignal
}

/**
 * Polls `read` until the session has `tier` (or a higher one), pausing `intervalMs` between the
 * end of one poll and the start of the next. A poll that got no answer, a 429 or a 5xx is
 * tried again at the next turn; any other failure ends the wait with it.
 */
export function waitForTier(
  read: () => Promise<Session>,
  tier: Tier,
  options: WaitOptions,
): Promise<Session> {
  const wanted = TIERS.indexOf(tier)
  if (wanted < 0) return Promise.reject(new TypeError(`waitForTier: unknown tier ${String(tier)}`))
  const { timeoutMs, signal } = options
  if (typeof timeoutMs !== 'number' || !(timeoutMs >= 0)) {
    return Promise.reject(new TypeError('waitForTier: timeoutMs must be a number of milliseconds'))
  }
  const intervalMs = Math.max(MIN_POLL_INTERVAL_MS, Number(options.intervalMs) || 0)
  return new Promise((resolve, reject) => {
    let done = false
    let next: ReturnType<typeof setTimeout> | undefined
    const finish = (outcome: Session | Error): void => {
      if (done) return
      done = true
      clearTimeout(deadline)
      if (next !== undefined) clearTimeout(next)
      signal?.removeEventListener('abort', onAbort)
      if (outcome instanceof Error) reject(outcome)
      else resolve(outcome)
    }
    const onAbort = (): void =>
      finish(new CampusgateError(0, ABORTED, `the wait for ${tier} was aborted`))
    const deadline = setTimeout(
      () => finish(new CampusgateError(0, TIMED_OUT, `not ${tier} within ${timeoutMs} ms`)),
      timeoutMs,
    )
    const poll = (): void => {
      read().then(
        (session) => {
          if (done) return
          if (TIERS.indexOf(session.tier) >= wanted) finish(session)
          else next = setTimeout(poll, intervalMs)
        },
        (error: unknown) => {
          if (done) return
          if (worthRetrying(error)) next = setTimeout(poll, intervalMs)
          else finish(error instanceof Error ? error : new Error(String(error)))
        },
      )
    }
    if (signal?.aborted === true) return onAbort()
    signal?.addEventListener('abort', onAbort)
    poll()
  })
}

/** No answer, too many requests, or campusgate briefly unwell: the next turn may do better. */
function worthRetrying(error: unknown): boolean {
  if (!(error instanceof CampusgateError)) return false
  return error.status === 0 || error.status === 429 || error.status >= 500
}
