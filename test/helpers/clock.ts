import { mock } from 'node:test'
import type { Clock } from '../../src/clock.js'

/** A clock that moves only when told to. */
export class TestClock implements Clock {
  private current: number

  constructor(start = Date.parse('2026-01-01T00:00:00Z')) {
    this.current = start
  }

  now(): Date {
    return new Date(this.current)
  }

  advance(ms: number): void {
    this.current += ms
  }
}

/**
 * Runs `run` with the system clock (`Date`) `ms` ahead and stopped there, then puts it back
 * (node:test's mock timers). For a library that reads the time itself instead of taking the
 * app's clock: openid-client ages the provider's keys so.
 */
export async function afterSystemTime<T>(ms: number, run: () => Promise<T>): Promise<T> {
  mock.timers.enable({ apis: ['Date'], now: Date.now() + ms })
  try {
    return await run()
  } finally {
    mock.timers.reset()
  }
}
