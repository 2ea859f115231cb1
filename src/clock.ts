/** The source of "now" for everything that expires; tests inject one they can move. */
export interface Clock {
  now(): Date
}

export const systemClock: Clock = { now: () => new Date() }
