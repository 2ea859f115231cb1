// The run's figures: medians per scenario, the issue's ratios and targets, the touch writes, a
// table on stdout and bench/results/latest.json (quick.json for --quick) with every raw figure.
import { spawnSync } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { consoleTable, type ConsolePageTiming } from '../console.js'
import { worstInputsTable, type WorstInputTiming } from '../worst-inputs.js'
import type { Plan, Settings } from './plan.js'
import type { WrkResult } from './wrk.js'

export interface Run {
  scenario: string
  /** 0 is the warm-up, left out of the medians. */
  round: number
  rps: number
  /** Share of one core the server used during the run. */
  serverCpu: number
  /** Server CPU time per answered request, in microseconds. */
  cpuUsPerRequest: number
  ok: boolean
  /** Sessions written back during the run, counted in the database; null: not a key check. */
  touches: number | null
  result: WrkResult
}

export interface ReportInput {
  settings: Settings
  plan: Plan
  runs: Run[]
  memory: Record<string, { rssMb: number; peakRssMb: number; anonRssMb: number }>
  notes: string[]
  touchIntervalMs: number
  /** BENCH_ONLY or BENCH_SECONDS/BENCH_ROUNDS changed the run: not the reference figures. */
  partial: boolean
  /** The console scenario's pages (bench/console.ts); empty when it did not run. */
  consolePages: ConsolePageTiming[]
  /** The worst-inputs scenario's rows (bench/worst-inputs.ts); empty when it did not run. */
  worstInputs: WorstInputTiming[]
}

interface Median {
  rps: number
  p50Ms: number
  p99Ms: number
  serverCpu: number
  cpuUsPerRequest: number
  /** Share of its core wrk used: near 100% would make wrk the bottleneck. */
  loadCpu: number
  /** Share of the answers that wrote a touch (the median run's), or null: not counted. */
  touchShare: number | null
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

const round = (value: number, digits: number): number => Number(value.toFixed(digits))

function version(command: string, args: string[]): string {
  // wrk prints its version with its usage and exits 1: the first line is read either way.
  const result = spawnSync(command, args, { encoding: 'utf8' })
  return `${result.stdout}${result.stderr}`.split('\n')[0]?.trim() || 'unknown'
}

export function report(input: ReportInput): number {
  const { settings, plan, runs } = input
  const medians = new Map<string, Median>()
  for (const scenario of plan.scenarios) {
    const measured = runs.filter((r) => r.scenario === scenario.id && r.round > 0)
    if (measured.length === 0) continue
    medians.set(scenario.id, {
      rps: median(measured.map((r) => r.rps)),
      p50Ms: median(measured.map((r) => r.result.latencyUs.p50 / 1000)),
      p99Ms: median(measured.map((r) => r.result.latencyUs.p99 / 1000)),
      serverCpu: median(measured.map((r) => r.serverCpu)),
      cpuUsPerRequest: median(measured.map((r) => r.cpuUsPerRequest)),
      loadCpu: median(measured.map((r) => r.result.loadCpu)),
      touchShare: measured.every((r) => r.touches !== null)
        ? median(measured.map((r) => r.touches! / Math.max(1, r.result.requests)))
        : null,
    })
  }
  const rps = (id: string): number | null => medians.get(id)?.rps ?? null
  const ratio = (a: string, b: string): number | null => {
    const x = rps(a)
    const y = rps(b)
    return x === null || y === null || y === 0 ? null : round(x / y, 3)
  }
  const [small, , large] = settings.sizes.map((size) =>
    size >= 1_000_000 ? `${size / 1_000_000}M` : `${size / 1_000}k`,
  )
  const session = `session-sqlite${small}`
  const p99 = (id: string): number | null => medians.get(id)?.p99Ms ?? null
  const ratios = {
    sessionVsBareFastify: ratio(session, 'bare'),
    sessionNoTouchVsBareFastify: ratio(`${session}-notouch`, 'bare'),
    sessionTouchesVsNoTouch: ratio(session, `${session}-notouch`),
    session1MTouchesVsNoTouch: ratio(`session-sqlite${large}`, `session-sqlite${large}-notouch`),
    postgresTouchesVsNoTouch: ratio(`session-pg${small}`, `session-pg${small}-notouch`),
    postgres1MTouchesVsNoTouch: ratio(`session-pg${large}`, `session-pg${large}-notouch`),
    morningRushVsNoTouch: ratio('touch-sqlite', `${session}-notouch`),
    postgresMorningRushVsNoTouch: ratio('touch-pg', `session-pg${small}-notouch`),
    sessionVsBetterAuth: ratio(session, 'better-auth'),
    sessionVsBetterAuthBest: ratio(session, 'better-auth-cached'),
    session1MVs10k: ratio(`session-sqlite${large}`, session),
    // Two sessions a user against one, as many sessions in all (docs/sessions.md, "Devices").
    twoDevicesVsOne: ratio(`session-sqlite${small}-2dev`, session),
    postgresTwoDevicesVsOne: ratio(`session-pg${small}-2dev`, `session-pg${small}`),
    sessionPostgresVsRawPostgres: ratio(`session-pg${small}`, `raw-pg${small}`),
    session1MPostgresVsRawPostgres: ratio(`session-pg${large}`, `raw-pg${large}`),
    sessionVsRawSqlite: ratio(session, `raw-sqlite${small}`),
    sessionVsKeyCheckSchema: ratio(session, `keycheck-sqlite${small}`),
    session1MVsKeyCheckSchema1M: ratio(`session-sqlite${large}`, `keycheck-sqlite${large}`),
    appRouteVsSession: ratio(`app-sqlite${small}`, session),
    unknownVsValidKey: ratio(`unknown-sqlite${large}`, `session-sqlite${large}`),
    sessionP99VsBareP99:
      p99(session) !== null && p99('bare') ? round(p99(session)! / p99('bare')!, 3) : null,
    registerVsRawInsert: ratio('register-sqlite', 'raw-register-sqlite'),
    expressKitVsFetch: ratio('kit-express', 'fetch-express'),
    // This build against BENCH_EARLIER_BUILD's, in the same rounds.
    sessionVsEarlierBuild: ratio(session, `session-sqlite${small}-earlier`),
    sessionNoTouchVsEarlierBuild: ratio(
      `${session}-notouch`,
      `session-sqlite${small}-earlier-notouch`,
    ),
    session1MVsEarlierBuild: ratio(`session-sqlite${large}`, `session-sqlite${large}-earlier`),
    session1MNoTouchVsEarlierBuild: ratio(
      `session-sqlite${large}-notouch`,
      `session-sqlite${large}-earlier-notouch`,
    ),
    registerVsEarlierBuild: ratio('register-sqlite', 'register-sqlite-earlier'),
    morningRushVsEarlierBuild: ratio('touch-sqlite', 'touch-sqlite-earlier'),
    postgresMorningRushVsEarlierBuild: ratio('touch-pg', 'touch-pg-earlier'),
    postgresVsEarlierBuild: ratio(`session-pg${small}`, `session-pg${small}-earlier`),
    postgresNoTouchVsEarlierBuild: ratio(
      `session-pg${small}-notouch`,
      `session-pg${small}-earlier-notouch`,
    ),
    postgres1MVsEarlierBuild: ratio(`session-pg${large}`, `session-pg${large}-earlier`),
    postgres1MNoTouchVsEarlierBuild: ratio(
      `session-pg${large}-notouch`,
      `session-pg${large}-earlier-notouch`,
    ),
  }
  // The same comparisons by server CPU per request: steadier than req/s on a shared machine.
  const cpu = (id: string): number | null => medians.get(id)?.cpuUsPerRequest ?? null
  const cheaper = (a: string, b: string): number | null => {
    const x = cpu(a)
    const y = cpu(b)
    return x === null || y === null || x === 0 ? null : round(y / x, 3)
  }
  const cpuRatios = {
    sessionVsBareFastify: cheaper(session, 'bare'),
    sessionVsBetterAuth: cheaper(session, 'better-auth'),
    sessionVsBetterAuthBest: cheaper(session, 'better-auth-cached'),
    session1MVs10k: cheaper(`session-sqlite${large}`, session),
    sessionTouchesVsNoTouch: cheaper(session, `${session}-notouch`),
    postgresTouchesVsNoTouch: cheaper(`session-pg${small}`, `session-pg${small}-notouch`),
    morningRushVsNoTouch: cheaper('touch-sqlite', `${session}-notouch`),
    postgresMorningRushVsNoTouch: cheaper('touch-pg', `session-pg${small}-notouch`),
    sessionPostgresVsRawPostgres: cheaper(`session-pg${small}`, `raw-pg${small}`),
    sessionVsRawSqlite: cheaper(session, `raw-sqlite${small}`),
    sessionVsKeyCheckSchema: cheaper(session, `keycheck-sqlite${small}`),
    expressKitVsFetch: cheaper('kit-express', 'fetch-express'),
    sessionVsEarlierBuild: cheaper(session, `session-sqlite${small}-earlier`),
    sessionNoTouchVsEarlierBuild: cheaper(
      `${session}-notouch`,
      `session-sqlite${small}-earlier-notouch`,
    ),
    registerVsEarlierBuild: cheaper('register-sqlite', 'register-sqlite-earlier'),
    morningRushVsEarlierBuild: cheaper('touch-sqlite', 'touch-sqlite-earlier'),
    postgresMorningRushVsEarlierBuild: cheaper('touch-pg', 'touch-pg-earlier'),
    postgresVsEarlierBuild: cheaper(`session-pg${small}`, `session-pg${small}-earlier`),
    postgresNoTouchVsEarlierBuild: cheaper(
      `session-pg${small}-notouch`,
      `session-pg${small}-earlier-notouch`,
    ),
    postgres1MVsEarlierBuild: cheaper(`session-pg${large}`, `session-pg${large}-earlier`),
  }
  // The median of the per-round ratios: the two run one after the other in every round, so a
  // swing of the shared host that lasts a round moves both; a ratio of medians mixes rounds.
  const paired = (a: string, b: string): number | null => {
    const perRound = runs
      .filter((x) => x.scenario === a && x.round > 0)
      .flatMap((x) => {
        const y = runs.find((r) => r.scenario === b && r.round === x.round)
        return y === undefined || y.rps === 0 ? [] : [x.rps / y.rps]
      })
    return perRound.length === 0 ? null : round(median(perRound), 3)
  }
  const pairedRatios = {
    sessionVsBareFastify: paired(session, 'bare'),
    sessionTouchesVsNoTouch: paired(session, `${session}-notouch`),
    session1MVs10k: paired(`session-sqlite${large}`, session),
    morningRushVsNoTouch: paired('touch-sqlite', `${session}-notouch`),
    postgresMorningRushVsNoTouch: paired('touch-pg', `session-pg${small}-notouch`),
    postgresTouchesVsNoTouch: paired(`session-pg${small}`, `session-pg${small}-notouch`),
    postgres1MTouchesVsNoTouch: paired(`session-pg${large}`, `session-pg${large}-notouch`),
    sessionVsEarlierBuild: paired(session, `session-sqlite${small}-earlier`),
    sessionNoTouchVsEarlierBuild: paired(
      `${session}-notouch`,
      `session-sqlite${small}-earlier-notouch`,
    ),
    session1MVsEarlierBuild: paired(`session-sqlite${large}`, `session-sqlite${large}-earlier`),
    session1MNoTouchVsEarlierBuild: paired(
      `session-sqlite${large}-notouch`,
      `session-sqlite${large}-earlier-notouch`,
    ),
    sessionPostgresVsRawPostgres: paired(`session-pg${small}`, `raw-pg${small}`),
    session1MPostgresVsRawPostgres: paired(`session-pg${large}`, `raw-pg${large}`),
    twoDevicesVsOne: paired(`session-sqlite${small}-2dev`, session),
    postgresTwoDevicesVsOne: paired(`session-pg${small}-2dev`, `session-pg${small}`),
    registerVsEarlierBuild: paired('register-sqlite', 'register-sqlite-earlier'),
    morningRushVsEarlierBuild: paired('touch-sqlite', 'touch-sqlite-earlier'),
    postgresMorningRushVsEarlierBuild: paired('touch-pg', 'touch-pg-earlier'),
    postgresVsEarlierBuild: paired(`session-pg${small}`, `session-pg${small}-earlier`),
    postgresNoTouchVsEarlierBuild: paired(
      `session-pg${small}-notouch`,
      `session-pg${small}-earlier-notouch`,
    ),
    postgres1MVsEarlierBuild: paired(`session-pg${large}`, `session-pg${large}-earlier`),
    postgres1MNoTouchVsEarlierBuild: paired(
      `session-pg${large}-notouch`,
      `session-pg${large}-earlier-notouch`,
    ),
  }
  const failures = plan.scenarios.filter((s) => runs.some((r) => r.scenario === s.id && !r.ok))
  const consoleWrong = input.consolePages.filter((page) => !page.ok)
  const worstWrong = input.worstInputs.filter((row) => !row.ok)
  // Flat as the input grows: the larger size's median over the smaller's, per input and engine.
  const worstGrowth = Object.fromEntries(
    input.worstInputs.flatMap((row, i, rows) => {
      const smaller = rows.find(
        (other, j) => j < i && other.input === row.input && other.engine === row.engine,
      )
      return smaller === undefined
        ? []
        : [
            [
              `${row.input}, ${row.engine}: ${row.size} vs ${smaller.size}`,
              round(row.medianMs / smaller.medianMs, 2),
            ],
          ]
    }),
  )

  // Reads stay reads; a scenario meant to touch does (CI's --quick run fails otherwise).
  const touchProblems: string[] = []
  const touchesOf = (id: string): Run[] =>
    runs.filter((r) => r.scenario === id && r.touches !== null)
  for (const scenario of plan.scenarios) {
    for (const run of touchesOf(scenario.id)) {
      const where = `${scenario.id} ${run.round === 0 ? 'warm-up' : `round ${run.round}`}`
      if (scenario.touches === 'none' && run.touches! > 0) {
        touchProblems.push(`${where}: ${run.touches} touches where none was due`)
      } else if (scenario.touches !== 'none' && run.touches === 0) {
        touchProblems.push(`${where}: no touch, though sessions were due`)
      }
    }
  }
  const touches = Object.fromEntries(
    plan.scenarios
      .filter((s) => touchesOf(s.id).length > 0)
      .map((s) => {
        const counted = touchesOf(s.id)
        const requests = counted.reduce((sum, r) => sum + r.result.requests, 0)
        const written = counted.reduce((sum, r) => sum + r.touches!, 0)
        return [s.id, { due: s.touches, requests, touches: written }]
      }),
  )

  const bareRps = rps('bare')
  const betterAuthRps = rps('better-auth')
  const rows = plan.scenarios.map((scenario) => {
    const m = medians.get(scenario.id)
    const times = (base: number | null): string =>
      m === undefined || base === null || base === 0 ? '' : (m.rps / base).toFixed(3)
    return {
      scenario: scenario.label,
      'req/s': m === undefined ? '' : Math.round(m.rps).toLocaleString('en'),
      'p50 ms': m === undefined ? '' : m.p50Ms.toFixed(2),
      'p99 ms': m === undefined ? '' : m.p99Ms.toFixed(2),
      '× bare Fastify': times(bareRps),
      '× better-auth': times(betterAuthRps),
      'server CPU': m === undefined ? '' : `${Math.round(m.serverCpu * 100)}%`,
      'CPU µs/req': m === undefined ? '' : m.cpuUsPerRequest.toFixed(0),
      'wrk CPU': m === undefined ? '' : `${Math.round(m.loadCpu * 100)}%`,
      touches: m?.touchShare == null ? '' : `${(m.touchShare * 100).toFixed(1)}%`,
      statuses: failures.includes(scenario) ? 'WRONG' : 'all as expected',
    }
  })

  const sessionServer = `cg-sqlite${large}`
  const targets = settings.quick
    ? []
    : [
        ['GET /session, steady touches ≥ 0.4× bare Fastify', ratios.sessionVsBareFastify, 0.4],
        [
          'GET /session, no touch due ≥ 0.45× bare Fastify',
          ratios.sessionNoTouchVsBareFastify,
          0.45,
        ],
        [
          `GET /session ${small}, steady touches ≥ 0.85× no touch due`,
          ratios.sessionTouchesVsNoTouch,
          0.85,
        ],
        [
          `PostgreSQL ${small}, steady touches ≥ 0.85× no touch due`,
          ratios.postgresTouchesVsNoTouch,
          0.85,
        ],
        [
          `PostgreSQL ${large}, steady touches ≥ 0.85× no touch due`,
          ratios.postgres1MTouchesVsNoTouch,
          0.85,
        ],
        ['morning rush ≥ 0.5× no touch due', ratios.morningRushVsNoTouch, 0.5],
        ['GET /session ≥ 0.7× key-check schema lookup', ratios.sessionVsKeyCheckSchema, 0.7],
        ['GET /session p99 ≤ 3× bare p99', ratios.sessionP99VsBareP99, 3, 'max'],
        ['GET /session ≥ 40× better-auth', ratios.sessionVsBetterAuth, 40],
        ['GET /session ≥ 15× better-auth best case', ratios.sessionVsBetterAuthBest, 15],
        [`${large} sessions ≥ 0.8× ${small}, steady touches`, ratios.session1MVs10k, 0.8],
        [
          `own memory (RssAnon) with ${large} sessions ≤ 300 MB`,
          input.memory[sessionServer]?.anonRssMb ?? null,
          300,
          'max',
        ],
        ['PostgreSQL ≥ 0.8× raw pg', ratios.sessionPostgresVsRawPostgres, 0.8],
        ['register ≥ 2000/s SQLite', rps('register-sqlite'), 2000],
        ['register ≥ 1000/s PostgreSQL', rps('register-pg'), 1000],
        ['unknown key within 20% of valid (≥ 0.8)', ratios.unknownVsValidKey, 0.8],
        ['unknown key within 20% of valid (≤ 1.2)', ratios.unknownVsValidKey, 1.2, 'max'],
        ['Express route with campusgate-node ≥ 1× with fetch', ratios.expressKitVsFetch, 1],
        // docs/console.md, "Speed": each page under 200 ms with 100,000 users.
        ...input.consolePages
          .filter((page) => !page.page.startsWith('users CSV'))
          .map((page) => [
            `console ${page.page}, ${page.engine}, ${page.users} users ≤ 200 ms (median)`,
            page.medianMs,
            200,
            'max',
          ]),
      ].map(([name, value, bound, kind]) => ({
        target: name as string,
        value: value as number | null,
        met:
          value === null
            ? null
            : kind === 'max'
              ? (value as number) <= (bound as number)
              : (value as number) >= (bound as number),
      }))

  const results = {
    generatedAt: new Date().toISOString(),
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? '',
      loadAverageAtEnd: loadavg().map((v) => round(v, 2)),
      node: process.version,
      wrk: version('wrk', ['-v']),
      betterAuth: (
        JSON.parse(readFileSync('bench/node_modules/better-auth/package.json', 'utf8')) as {
          version: string
        }
      ).version,
    },
    settings,
    ratios,
    cpuRatios,
    pairedRatios,
    registerPerSecond: rps('register-sqlite'),
    registerPerSecondPostgres: rps('register-pg'),
    targets,
    touches: { intervalMs: input.touchIntervalMs, byScenario: touches },
    memory: input.memory,
    medians: Object.fromEntries(medians),
    notes: input.notes,
    failures: failures.map((s) => s.id),
    touchProblems,
    scenarios: plan.scenarios,
    runs,
    consolePages: input.consolePages,
    worstInputs: input.worstInputs,
    worstGrowth,
  }
  mkdirSync('bench/results', { recursive: true })
  // Only a full run replaces latest.json.
  const file = settings.quick
    ? 'bench/results/quick.json'
    : input.partial
      ? 'bench/results/partial.json'
      : 'bench/results/latest.json'
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`)
  // The same table as Markdown, for docs/performance.md.
  const columns = Object.keys(rows[0] ?? {})
  const markdown = [
    `| ${columns.join(' | ')} |`,
    `| ${columns.map((c) => (c === 'scenario' ? '---' : '---:')).join(' | ')} |`,
    ...rows.map((row) => `| ${Object.values(row).join(' | ')} |`),
  ]
  writeFileSync(file.replace(/\.json$/, '.md'), `${markdown.join('\n')}\n`)

  console.log(
    `\ncampusgate bench: ${settings.rounds} round(s) × ${settings.seconds}s per scenario, ` +
      `${settings.connections} connections, medians; servers on core 0, wrk on core 1\n`,
  )
  console.table(rows)
  console.log('ratios (req/s)', ratios)
  console.log('ratios (server CPU per request)', cpuRatios)
  console.log('ratios (req/s, median of the per-round ratios)', pairedRatios)
  console.log(
    `registrations/s: SQLite ${results.registerPerSecond}, PostgreSQL ${results.registerPerSecondPostgres}`,
  )
  console.log('touches (counted in the database)', touches)
  if (input.consolePages.length > 0) {
    console.log('the console, one request at a time')
    console.table(consoleTable(input.consolePages))
  }
  if (input.worstInputs.length > 0) {
    console.log('worst inputs, one request at a time (each at two sizes)')
    console.table(worstInputsTable(input.worstInputs))
    console.log('worst inputs: larger size / smaller size (flat is about 1)', worstGrowth)
  }
  if (targets.length > 0) console.table(targets)
  for (const note of input.notes) console.log(`note: ${note}`)
  console.log(`written to ${file}`)
  if (failures.length > 0) console.log(`WRONG STATUSES in: ${failures.map((s) => s.id).join(', ')}`)
  for (const problem of touchProblems) console.log(`TOUCH: ${problem}`)
  for (const page of consoleWrong) console.log(`WRONG ANSWER from the console: ${page.page}`)
  for (const row of worstWrong)
    console.log(`WRONG ANSWER: ${row.input}, ${row.size}, ${row.engine}`)
  return failures.length > 0 ||
    touchProblems.length > 0 ||
    consoleWrong.length > 0 ||
    worstWrong.length > 0
    ? 1
    : 0
}
