// npm run bench: campusgate, its baselines and better-auth measured in one run on this machine:
// every server in its own process pinned to one core, wrk pinned to the other, several interleaved
// rounds, medians. `--quick` runs each scenario for one second on small datasets, to prove the bench
// still works (statuses are checked, speed is not). Writes bench/results/latest.json (or
// bench/results/quick.json with --quick). See docs/performance.md.
// Environment: BENCH_SECONDS, BENCH_ROUNDS, BENCH_POSTGRES_URL ("" leaves PostgreSQL out),
// BENCH_ONLY (comma-separated scenario ids: run just those, with what they need), BENCH_PROFILE
// (a directory: every server runs with --cpu-prof and leaves its profiles in DIR/<server>),
// BENCH_NODE_FLAGS (node options, space-separated, for every server). The `console` scenario
// (bench/console.ts: the operator console's pages with 100,000 users) and the `worst-inputs` one
// (bench/worst-inputs.ts: introspection's and GET /user/data's worst inputs at two sizes) run
// after the others.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { measureConsole } from './console.js'
import { measureWorstInputs } from './worst-inputs.js'
import { BENCH_APP } from './harness/bench-app.js'
import { loadDist } from './harness/dist.js'
import { benchPort } from './harness/ports.js'
import { makePlan, settingsFrom, type Plan, type Scenario } from './harness/plan.js'
import {
  LOAD_CPU,
  SERVER_CPU,
  startServer,
  type Server,
  type ServerSpec,
} from './harness/processes.js'
import { pinPostgres, type Pinned } from './harness/postgres-affinity.js'
import { report, type Run } from './harness/report.js'
import {
  dropPostgresSchemas,
  schemaUrl,
  seedPostgres,
  seedKeyCheckSqlite,
  seedSqlite,
} from './harness/seed.js'
import { touchControl, windowOf, type TouchControl } from './harness/touches.js'
import { allAsExpected, requestsPerSecond, runWrk } from './harness/wrk.js'

const ROOT = new URL('..', import.meta.url).pathname
process.chdir(ROOT)

const settings = settingsFrom(process.argv.slice(2), process.env)
const plan = narrow(makePlan(settings), process.env.BENCH_ONLY)
/** BENCH_ONLY names it, or names nothing. */
const wanted = (id: string): boolean =>
  (process.env.BENCH_ONLY ?? '') === '' || process.env.BENCH_ONLY!.split(',').includes(id)
const consoleWanted = wanted('console')
const worstInputsWanted = wanted('worst-inputs')
const notes: string[] = []
const log = (line: string): void => void process.stderr.write(`${line}\n`)

/** BENCH_ONLY: the named scenarios, and the servers and datasets they use. */
function narrow(full: Plan, only: string | undefined): Plan {
  if (only === undefined || only === '') return full
  const ids = only.split(',')
  const scenarios = full.scenarios.filter((s) => ids.includes(s.id))
  const named = new Set(scenarios.map((c) => c.server))
  // A backend in front of campusgate needs that campusgate too.
  for (const s of full.servers) {
    if (named.has(s.name) && s.what.kind === 'express-guard') named.add(s.what.upstream)
  }
  const servers = full.servers.filter((s) => named.has(s.name))
  // Datasets the servers serve, and those the scenarios draw their keys from (bare Fastify's).
  const used = new Set([
    ...servers.flatMap((s) => ('dataset' in s.what ? [s.what.dataset] : [])),
    ...scenarios.flatMap((c) => ('dataset' in c.keys ? [c.keys.dataset] : [])),
  ])
  return { scenarios, servers, datasets: full.datasets.filter((d) => used.has(d.name)) }
}

function newestMtime(dir: string): number {
  const listing = spawnSync('find', [dir, '-type', 'f', '-printf', '%T@\\n'], { encoding: 'utf8' })
  return Math.max(0, ...listing.stdout.split('\n').filter(Boolean).map(Number))
}

/**
 * campusgate is measured as `npm start` runs it: from dist/, rebuilt when the sources are newer;
 * campusgate-node likewise from its dist/.
 */
function ensureBuild(): void {
  const fresh = (dist: string, src: string): boolean =>
    existsSync(dist) && newestMtime(dist) >= newestMtime(src)
  if (fresh('dist', 'src') && fresh('packages/node/dist', 'packages/node/src')) return
  log('building dist/ …')
  const build = spawnSync('npm', ['run', 'build', '--silent'], { stdio: 'inherit' })
  if (build.status !== 0) throw new Error('npm run build failed')
}

/** better-auth comes from bench/package.json, installed on first use. */
function ensureBenchDependencies(): void {
  if (existsSync('bench/node_modules/better-auth/package.json')) return
  log('installing bench/package.json (better-auth) …')
  const install = spawnSync('npm', ['ci', '--prefix', 'bench', '--no-audit', '--no-fund'], {
    stdio: 'inherit',
  })
  if (install.status !== 0) throw new Error('npm ci --prefix bench failed')
}

// Resolved here, so servers started in another working directory still find it.
const TSX = import.meta.resolve('tsx')
const tsx = (file: string, ...args: string[]): string[] => ['--import', TSX, file, ...args]

/** Whether the build at `root` reads RATE_LIMIT_PER_ADDRESS (dist/config/ since the split). */
function readsLimitVariables(root: string): boolean {
  return ['dist/config.js', 'dist/config/rate-limits.js']
    .map((file) => join(root, file))
    .filter((file) => existsSync(file))
    .some((file) => readFileSync(file, 'utf8').includes('RATE_LIMIT_PER_ADDRESS'))
}

async function main(): Promise<number> {
  ensureBuild()
  ensureBenchDependencies()
  const dist = await loadDist()
  const dir = mkdtempSync(join(tmpdir(), 'campusgate-bench-'))
  const schemas: string[] = []
  let postgresPinned: Pinned | null = null
  const servers = new Map<string, Server>()
  const controls = new Map<string, TouchControl>()
  try {
    // docs/decisions.md, "Rate limits": one address sends all the load, so the per-address limits are off.
    const hasLimitVariables = readsLimitVariables(ROOT)
    if (!hasLimitVariables && settings.quick) {
      // CI's --quick run is of this very build: a fallback here means the bench no longer
      // recognises it, and every campusgate figure would carry the rate limiter's cost.
      console.error(
        'bench: dist/ does not read RATE_LIMIT_PER_ADDRESS; campusgate would not run as npm start runs it',
      )
      return 1
    }
    if (!hasLimitVariables) {
      notes.push(
        'this build predates RATE_LIMIT_PER_ADDRESS: campusgate ran from bench/servers/' +
          'campusgate.ts (dist/ with the per-address limits lifted), not node dist/main.js',
      )
    }

    const earlierRoot = settings.earlierBuild
    const earlierDist = earlierRoot === null ? null : await loadDist(earlierRoot)
    if (earlierRoot !== null) {
      if (!readsLimitVariables(earlierRoot)) {
        console.error(
          'bench: BENCH_EARLIER_BUILD predates RATE_LIMIT_PER_ADDRESS; pick a later one',
        )
        return 1
      }
      const head = spawnSync('git', ['-C', earlierRoot, 'rev-parse', '--short', 'HEAD'], {
        encoding: 'utf8',
      })
      notes.push(`earlier build: ${earlierRoot} at ${head.stdout.trim() || 'an unknown commit'}`)
    }

    log('seeding …')
    const started = Date.now()
    const urls = new Map<string, string>()
    for (const dataset of plan.datasets) {
      if (dataset.engine === 'sqlite') {
        const path = join(dir, `${dataset.name}.db`)
        await seedSqlite(dataset.earlier === true ? earlierDist! : dist, path, dataset)
        urls.set(dataset.name, path)
      } else {
        // Lower case: the schema is created and dropped unquoted, which PostgreSQL folds to lower
        // case, but named quoted by the migrator; with `pg1M` the drop missed it. A hyphen is no
        // part of an unquoted name.
        const schema = `cgbench_${dataset.name.toLowerCase().replace(/[^a-z0-9]/g, '_')}_${process.pid}`
        schemas.push(schema)
        await seedPostgres(
          dataset.earlier === true ? earlierDist! : dist,
          settings.postgresUrl!,
          schema,
          dataset,
        )
        urls.set(dataset.name, schemaUrl(settings.postgresUrl!, schema))
      }
      log(
        `  ${dataset.name}: ${dataset.size} sessions (${Math.round((Date.now() - started) / 1000)}s)`,
      )
    }
    const cookies = join(dir, 'better-auth-cookies')
    const betterAuthDb = join(dir, 'better-auth.db')
    if (plan.servers.some((s) => s.what.kind === 'better-auth')) {
      const seeded = spawnSync(
        process.execPath,
        tsx(
          'bench/servers/better-auth.ts',
          'seed',
          String(settings.betterAuthSessions),
          cookies,
          String(settings.betterAuthCached),
        ),
        { env: { ...process.env, DATABASE: betterAuthDb }, stdio: 'inherit' },
      )
      if (seeded.status !== 0) throw new Error('seeding better-auth failed')
      log(
        `  better-auth: ${settings.betterAuthSessions} sessions (${Math.round((Date.now() - started) / 1000)}s)`,
      )
    }

    if (schemas.length > 0) {
      const { pinned, why } = await pinPostgres(settings.postgresUrl!, LOAD_CPU)
      postgresPinned = pinned
      notes.push(why)
      log(`  ${why}`)
    }

    log('starting servers …')
    const code2sessionPort = await benchPort()
    const code2session = await startServer({
      name: 'code2session',
      command: process.execPath,
      args: tsx('bench/servers/code2session.ts'),
      env: { PORT: String(code2sessionPort) },
      port: code2sessionPort,
      cpu: LOAD_CPU,
    })
    servers.set('code2session', code2session)
    const specs: ServerSpec[] = []
    // Chosen first, so a backend knows the port of the campusgate it stands in front of.
    const ports = new Map<string, number>()
    for (const planned of plan.servers) ports.set(planned.name, await benchPort())
    for (const planned of plan.servers) {
      const port = ports.get(planned.name)!
      const what = planned.what
      const base = { name: planned.name, port, cpu: SERVER_CPU, command: process.execPath }
      if (what.kind === 'bare') {
        specs.push({
          ...base,
          args: tsx('bench/servers/baselines.ts', 'bare'),
          env: { PORT: String(port) },
        })
      } else if (what.kind === 'raw') {
        const database = urls.get(what.dataset)!
        specs.push({
          ...base,
          args: tsx('bench/servers/baselines.ts', what.engine === 'sqlite' ? 'sqlite' : 'pg'),
          env: { PORT: String(port), DATABASE: database },
        })
      } else if (what.kind === 'keycheck') {
        const database = join(dir, `${what.dataset}-keycheck.db`)
        seedKeyCheckSqlite(
          dist,
          database,
          plan.datasets.find((d) => d.name === what.dataset)!,
        )
        specs.push({
          ...base,
          args: tsx('bench/servers/baselines.ts', 'keycheck'),
          env: { PORT: String(port), DATABASE: database },
        })
      } else if (what.kind === 'campusgate') {
        const database = urls.get(what.dataset)!
        const env: Record<string, string> = {
          PORT: String(port),
          HOST: '127.0.0.1',
          DATABASE_URL: database.startsWith('postgres') ? database : `sqlite:${database}`,
          RATE_LIMIT_PER_ADDRESS: '0',
          RATE_LIMIT_REGISTRATION_PER_ADDRESS: '0',
        }
        if (what.messenger === true) {
          // Configuring one provider means configuring both (no half sandbox); registration never
          // calls the identity provider, so these addresses are never asked.
          Object.assign(env, {
            MESSENGER_API_BASE_URL: code2session.url,
            UNIVERSITY_AUTHORIZE_URL: `${code2session.url}/university/authorise`,
            UNIVERSITY_TOKEN_URL: `${code2session.url}/university/token`,
            UNIVERSITY_CLIENT_ID: 'bench-client',
            UNIVERSITY_CLIENT_SECRET: 'bench-secret',
          })
        }
        const direct = !what.appRoute && hasLimitVariables
        if (!hasLimitVariables) env.BENCH_LIFT_RATE_LIMITS = '1'
        specs.push({
          ...base,
          args:
            what.earlier === true
              ? [join(earlierRoot!, 'dist/main.js')]
              : direct
                ? [join(ROOT, 'dist/main.js')]
                : tsx(join(ROOT, 'bench/servers/campusgate.ts')),
          env,
          // Its own folder: a development key file and ./data are per process.
          cwd: mkdirSync(join(dir, planned.name), { recursive: true }) ?? join(dir, planned.name),
        })
      } else if (what.kind === 'express-guard') {
        specs.push({
          ...base,
          args: tsx('bench/servers/express-guard.ts', what.mode),
          env: { PORT: String(port), UPSTREAM: `http://127.0.0.1:${ports.get(what.upstream)!}` },
        })
      } else {
        specs.push({
          ...base,
          args: tsx('bench/servers/better-auth.ts', what.mode),
          env: { PORT: String(port), DATABASE: betterAuthDb },
        })
      }
    }
    const profile = process.env.BENCH_PROFILE
    const nodeFlags = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter((flag) => flag !== '')
    for (const spec of specs) {
      const profiling = profile ? ['--cpu-prof', `--cpu-prof-dir=${join(profile, spec.name)}`] : []
      spec.args = [...nodeFlags, ...profiling, ...spec.args]
    }
    // A few at a time: twenty Node processes starting at once on two cores would time out.
    const queue = [...specs]
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let spec = queue.shift(); spec !== undefined; spec = queue.shift()) {
          servers.set(spec.name, await startServer(spec))
        }
      }),
    )

    // Single-use keys: each run of a logout or touch scenario gets a fresh slice of its dataset.
    const cursors = new Map<string, number>()
    const slices = new Map<string, number>()
    const scriptFor = (scenario: Scenario, seconds: number): Record<string, string | number> => {
      const base = { method: scenario.method, path: scenario.path }
      const keys = scenario.keys
      if (keys.from === 'code') {
        const salt = `c${process.pid}-${Date.now()}-`
        return { ...base, keys: 'code', salt, appid: BENCH_APP.appId, secret: BENCH_APP.appSecret }
      }
      if (keys.from === 'file') {
        const file = keys.file === 'plain' ? cookies : `${cookies}.cached`
        return { ...base, keys: 'file', file, header: 'cookie', nonnull: 1 }
      }
      const dataset = plan.datasets.find((d) => d.name === keys.dataset)!
      if (keys.from === 'slice') {
        const start = cursors.get(dataset.name) ?? 0
        const limit = Math.ceil(seconds * keys.perSecond)
        if (start + limit > dataset.size) throw new Error(`${dataset.name}: out of single-use keys`)
        cursors.set(dataset.name, start + limit)
        slices.set(scenario.id, limit)
        return { ...base, keys: 'generated', salt: dataset.salt, n: dataset.size, start, limit }
      }
      // Drawn at random, as real traffic is: a key's next use is not known to come in turn.
      const draw = { keys: 'generated', salt: keys.salt ?? dataset.salt, n: dataset.size }
      return { ...base, ...draw, draw: 'random' }
    }

    const runs: Run[] = []
    // Only the servers a scenario talks to run during it; the others are stopped (processes.ts).
    const upstreamOf = new Map(
      plan.servers.flatMap((s) =>
        s.what.kind === 'express-guard' ? [[s.name, s.what.upstream] as const] : [],
      ),
    )
    const runOnly = async (name: string): Promise<void> => {
      const running = new Set([name, upstreamOf.get(name), 'code2session'])
      for (const [other, server] of servers) {
        if (running.has(other)) server.resume()
        else server.pause()
      }
      // A resumed server first runs the timers that fell due while it was stopped.
      await new Promise((resolve) => setTimeout(resolve, 300))
    }
    const interval = dist.config.loadConfig({}).sessions.touchIntervalMs
    const DAY_MS = 86_400_000
    // The campusgate servers' datasets: their touches are made due (touches.ts) and counted.
    const touchable = new Set(
      plan.servers.flatMap((s) => (s.what.kind === 'campusgate' ? [s.what.dataset] : [])),
    )
    const controlOf = (name: string): TouchControl => {
      let control = controls.get(name)
      if (control === undefined) {
        const engine = plan.datasets.find((d) => d.name === name)!.engine
        control = touchControl(engine, urls.get(name)!)
        controls.set(name, control)
      }
      return control
    }
    const windows = new Map<string, number>()
    const measure = async (scenario: Scenario, round: number, seconds: number): Promise<void> => {
      const server = servers.get(scenario.server)!
      await runOnly(scenario.server)
      const keys = scenario.keys
      // Unknown keys (another salt) have no session to touch.
      const datasetName =
        keys.from === 'slice' || (keys.from === 'dataset' && keys.salt === undefined)
          ? keys.dataset
          : null
      const control =
        datasetName !== null && touchable.has(datasetName) ? controlOf(datasetName) : null
      // Warm, as a server under steady traffic is: the run before this one may have been
      // another server's, with its own data in the caches and PostgreSQL's shared buffers. Before
      // the window is made due, so it touches nothing, and before the run's own clock starts.
      if (settings.preheatSeconds > 0 && (keys.from === 'dataset' || keys.from === 'file')) {
        await runWrk({
          url: server.url,
          seconds: settings.preheatSeconds,
          connections: settings.connections,
          script: scriptFor(scenario, settings.preheatSeconds),
        })
      }
      let window = null
      if (control !== null && scenario.touches === 'steady') {
        const k = windows.get(datasetName!) ?? 0
        windows.set(datasetName!, k + 1)
        window = windowOf(k, (seconds * 1000) / interval)
        await control.spread(window, Date.now(), seconds * 1000, interval)
      }
      const startedAt = Date.now()
      const cpuBefore = server.cpuSeconds()
      const result = await runWrk({
        url: server.url,
        seconds,
        connections: settings.connections,
        script: scriptFor(scenario, seconds),
      })
      const cpuUsed = server.cpuSeconds() - cpuBefore
      const serverCpu = cpuUsed / (result.durationUs / 1e6)
      // CPU per answer: unlike req/s, it holds when other work shares the server's core.
      const cpuUsPerRequest = (cpuUsed * 1e6) / Math.max(1, result.requests)
      const ok = allAsExpected(result, scenario.expect)
      // The requests still in flight when wrk stopped finish first: a touch committed after the
      // window was set back would leave one of its sessions due in a later run with none due.
      if (control !== null) await new Promise((resolve) => setTimeout(resolve, 300))
      // A touch sets touched_at to its request's time: the run's are those within it.
      const touches =
        control === null ? null : await control.count(window, startedAt, Date.now() + 1000)
      if (control !== null && window !== null) await control.settle(window, Date.now() + DAY_MS)
      const slice = slices.get(scenario.id)
      if (slice !== undefined && result.requests > slice) {
        notes.push(`${scenario.id} round ${round}: more requests than single-use keys (${slice})`)
      }
      runs.push({
        scenario: scenario.id,
        round,
        rps: requestsPerSecond(result),
        serverCpu,
        cpuUsPerRequest,
        ok,
        touches,
        result,
      })
      log(
        `  ${round === 0 ? 'warm-up' : `round ${round}`} ${scenario.id}: ` +
          `${Math.round(requestsPerSecond(result))} req/s` +
          (touches === null ? '' : `, ${touches} touches`) +
          (ok ? '' : ` WRONG ${JSON.stringify(result.statuses)}`),
      )
    }

    if (settings.warmupSeconds > 0) {
      log('warming up …')
      for (const scenario of plan.scenarios) await measure(scenario, 0, settings.warmupSeconds)
    }
    for (let round = 1; round <= settings.rounds; round += 1) {
      log(`round ${round} of ${settings.rounds} …`)
      // Interleaved and rotated each round, so no scenario always runs at the same point of a
      // round; and backwards every other round, so no scenario always follows the same one. A
      // rotation alone keeps each one's predecessor: the steady-touch run always came first after
      // another server's (its caches, PostgreSQL's shared buffers, cold) and the no-touch run
      // always after it, on the same server, warm.
      const shift =
        ((round - 1) * Math.ceil(plan.scenarios.length / settings.rounds)) % plan.scenarios.length
      const rotated = [...plan.scenarios.slice(shift), ...plan.scenarios.slice(0, shift)]
      const order = round % 2 === 0 ? rotated.reverse() : rotated
      for (const scenario of order) await measure(scenario, round, settings.seconds)
    }

    // The console's pages, each asked alone of a server of its own (the others stopped).
    for (const server of servers.values()) server.pause()
    const consolePages = consoleWanted
      ? await measureConsole({
          dist,
          users: settings.quick ? 2_000 : 100_000,
          postgresUrl: settings.postgresUrl,
          rounds: settings.quick ? 3 : 15,
          log,
        })
      : []
    // Introspection's and GET /user/data's worst inputs, each at two sizes, likewise alone.
    const worstInputs = worstInputsWanted
      ? await measureWorstInputs({
          dist,
          historyRows: settings.quick ? [30_000, 60_000] : [50_000, 400_000],
          postgresUrl: settings.postgresUrl,
          rounds: settings.quick ? 3 : 15,
          log,
        })
      : []

    const memory = Object.fromEntries(
      [...servers.values()].map((server) => [server.name, server.memory()]),
    )
    const partial = ['BENCH_ONLY', 'BENCH_SECONDS', 'BENCH_ROUNDS'].some((v) => process.env[v])
    return report({
      settings,
      plan,
      runs,
      memory,
      notes,
      touchIntervalMs: interval,
      partial,
      consolePages,
      worstInputs,
    })
  } finally {
    await Promise.all([...controls.values()].map((control) => control.close()))
    await Promise.all([...servers.values()].map((server) => server.stop()))
    postgresPinned?.restore()
    if (schemas.length > 0) await dropPostgresSchemas(settings.postgresUrl!, schemas)
    rmSync(dir, { recursive: true, force: true })
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    log(error instanceof Error ? (error.stack ?? error.message) : String(error))
    process.exit(1)
  },
)
