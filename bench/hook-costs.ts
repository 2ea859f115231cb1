// What each per-request hook of campusgate costs, read from a CPU profile of a server under load
// (`BENCH_PROFILE=DIR BENCH_ONLY=session-sqlite10k npm run bench`, then this on the profile).
// A hook's cost is the time spent in it and in what it calls, leaving out Fastify's own code it
// hands on to through done()/next() (the rest of the request). Shares are of the busy time; µs
// per request are those shares of the CPU per request the bench measured.
// Usage: npx tsx bench/hook-costs.ts PROFILE.cpuprofile CPU_US_PER_REQUEST
import { readFileSync } from 'node:fs'
import { selfTimes, type CpuProfile, type ProfileNode } from './harness/cpu-profile.js'

/** The hooks and steps of a guarded request, by the function that runs them in dist/. */
const HOOKS: [label: string, file: string, functionName: string | null][] = [
  ['protocol edge (Host check), onRequest', 'http/protocol-edge.js', null],
  ['media type (Accept), onRequest', 'http/media-type.js', null],
  ['rate limits, onRequest/preParsing/onResponse', 'http/rate-limit.js', null],
  ['tier guard, in all', 'http/tier-guard.js', 'requireTier'],
  ['  of which the key check (validate)', 'sessions/service.js', 'validate'],
  ['    of which SHA-256 of the key', 'lib/secrets.js', 'hashSecret'],
  ['    of which the SELECT', 'sessions/store.js', 'findSessionByKeyHash'],
  ['  of which the per-session count', 'http/rate-limit.js', 'countChecked'],
  ['GET /session handler', 'sessions/routes.js', null],
  ['request metrics, onResponse', 'operations/metrics.js', 'observeRequest'],
  ['request log line, onResponse', 'http/request-log.js', null],
]

const [file, perRequest] = process.argv.slice(2)
if (file === undefined || perRequest === undefined) {
  throw new Error('usage: npx tsx bench/hook-costs.ts PROFILE.cpuprofile CPU_US_PER_REQUEST')
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile
const byId = new Map(profile.nodes.map((node) => [node.id, node]))
const { self: selfTime, paused } = selfTimes(profile)
let busy = 0
for (const [id, time] of selfTime) {
  if (byId.get(id)!.callFrame.functionName !== '(idle)') busy += time
}

const isFastify = (node: ProfileNode): boolean =>
  /node_modules\/fastify\/(lib\/|fastify\.js)/.test(node.callFrame.url)
function cost(id: number): number {
  const node = byId.get(id)!
  let time = selfTime.get(id) ?? 0
  for (const child of node.children ?? []) {
    if (!isFastify(byId.get(child)!)) time += cost(child)
  }
  return time
}
const parentOf = new Map<number, number>()
for (const node of profile.nodes)
  for (const child of node.children ?? []) parentOf.set(child, node.id)
/** Outermost nodes only, so a recursive or nested call is not counted twice. */
function total(matches: (node: ProfileNode) => boolean): number {
  let sum = 0
  for (const node of profile.nodes) {
    if (!matches(node)) continue
    let up = parentOf.get(node.id)
    let nested = false
    while (up !== undefined && !nested) {
      nested = matches(byId.get(up)!)
      up = parentOf.get(up)
    }
    if (!nested) sum += cost(node.id)
  }
  return sum
}

const rows = HOOKS.map(([label, where, functionName]) => {
  const time = total(
    (node) =>
      node.callFrame.url.endsWith(`/dist/${where}`) &&
      (functionName === null || node.callFrame.functionName === functionName),
  )
  return {
    hook: label,
    'share of CPU': `${((time / busy) * 100).toFixed(1)} %`,
    'µs per request': ((time / busy) * Number(perRequest)).toFixed(1),
  }
})
console.table(rows)
console.log(
  `left out: ${(paused / 1e6).toFixed(1)} s while the server was stopped between its turns`,
)
