// Reading a V8 CPU profile (`node --cpu-prof`) of a bench server.

export interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}

export interface CpuProfile {
  nodes: ProfileNode[]
  samples: number[]
  /** µs since the previous sample, one per sample. */
  timeDeltas: number[]
}

/**
 * A sample that came this many times later than the profile's usual interval did not measure
 * work: the bench stops every server it is not loading (SIGSTOP), and the profiler's thread
 * stops with it, so the first sample after SIGCONT carries the whole pause and charges it to
 * whatever frame was running. Left in, one pause of a few seconds outweighs a round's work.
 */
const PAUSE_FACTOR = 20

/** Time spent in each node itself (µs), without the pauses; and how much pause was left out. */
export function selfTimes(profile: CpuProfile): { self: Map<number, number>; paused: number } {
  const deltas = profile.timeDeltas.filter((delta) => delta > 0).sort((a, b) => a - b)
  const usual = deltas.length === 0 ? 0 : deltas[Math.floor(deltas.length / 2)]
  const self = new Map<number, number>()
  let paused = 0
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i] ?? 0
    if (delta > usual * PAUSE_FACTOR) paused += delta
    else self.set(id, (self.get(id) ?? 0) + delta)
  })
  return { self, paused }
}
