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
