// What one bench run loads: the datasets, the servers (each its own process) and the scenarios.
import { saltFor, type Dataset } from './seed.js'

export interface Settings {
  quick: boolean
  rounds: number
  seconds: number
  warmupSeconds: number
  /**
   * An unmeasured run on the same server just before each measured one whose keys can be used
   * again, so no measured run starts cold after another server's (docs/performance.md).
   */
  preheatSeconds: number
  connections: number
  /** Live sessions of the small, medium and large datasets. */
  sizes: readonly [number, number, number]
  betterAuthSessions: number
  /** How many of them also get the cookie cache's cookie (collected through better-auth). */
  betterAuthCached: number
  /** Highest rates the slices of single-use keys are sized for (logout, touch). */
  maxLogoutPerSecond: number
  maxTouchPerSecond: number
  postgresUrl: string | null
  /**
   * BENCH_EARLIER_BUILD: a checkout of an earlier build (its dist/ built), whose key check and
   * registration run beside this build's in the same rounds, on datasets its own migrations made.
   */
  earlierBuild: string | null
}

export function settingsFrom(args: string[], env: NodeJS.ProcessEnv): Settings {
  const quick = args.includes('--quick')
  const postgresUrl = env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
  // Five rounds of three seconds rather than three of five: the same time, and a median that a
  // slow spell of the shared machine has to last through three rounds to move.
  const seconds = Number(env.BENCH_SECONDS ?? (quick ? 1 : 3))
  return {
    quick,
    rounds: Number(env.BENCH_ROUNDS ?? (quick ? 1 : 5)),
    seconds,
    warmupSeconds: quick ? 0 : 2,
    // --quick times nothing, so it warms nothing: it proves each scenario still answers as it must.
    preheatSeconds: quick ? 0 : 1,
    connections: 10,
    sizes: quick ? [1_000, 5_000, 20_000] : [10_000, 100_000, 1_000_000],
    betterAuthSessions: quick ? 300 : 10_000,
    betterAuthCached: quick ? 300 : 2_000,
    maxLogoutPerSecond: 5_000,
    // A fast host's morning rush ran past 8,000 a second, and out of keys (docs/performance.md).
    maxTouchPerSecond: 20_000,
    postgresUrl: postgresUrl === '' ? null : postgresUrl,
    earlierBuild: env.BENCH_EARLIER_BUILD ? env.BENCH_EARLIER_BUILD : null,
  }
}

export function sizeLabel(size: number): string {
  return size >= 1_000_000 ? `${size / 1_000_000}M` : `${size / 1_000}k`
}

export type Engine = 'sqlite' | 'postgres'

export interface PlannedDataset extends Dataset {
  engine: Engine
  /** Datasets whose keys are each used once (logout, touch) hand out slices. */
  singleUse: boolean
  /** Seeded and served by the earlier build (Settings.earlierBuild), not this one. */
  earlier?: boolean
}

export type ServerKind =
  | { kind: 'bare' }
  | { kind: 'raw'; engine: Engine; dataset: string }
  /** The raw lookup on a schema built for the key check (seed.ts `seedKeyCheckSqlite`). */
  | { kind: 'keycheck'; dataset: string }
  | {
      kind: 'campusgate'
      dataset: string
      appRoute: boolean
      messenger?: boolean
      /** The earlier build's `node dist/main.js` (Settings.earlierBuild). */
      earlier?: boolean
    }
  | { kind: 'better-auth'; mode: 'node' | 'fastify' }
  /** An Express backend in front of the campusgate server `upstream`. */
  | { kind: 'express-guard'; mode: 'kit' | 'fetch'; upstream: string }

export interface PlannedServer {
  name: string
  what: ServerKind
}

export interface Scenario {
  id: string
  label: string
  server: string
  method: 'GET' | 'POST'
  path: string
  expect: number
  /**
   * Which of its sessions are due a touch (touches.ts): `steady`, each once per interval as under
   * real traffic; `due`, every one (the morning rush); `none`, none, so the run measures reads as
   * between two touches. Touches are counted in the database after each run.
   */
  touches: 'steady' | 'due' | 'none'
  /** How load.lua picks credentials. */
  keys:
    | { from: 'dataset'; dataset: string; salt?: string }
    | { from: 'slice'; dataset: string; perSecond: number }
    | { from: 'code' }
    | { from: 'file'; file: 'plain' | 'cached' }
}

export interface Plan {
  datasets: PlannedDataset[]
  servers: PlannedServer[]
  scenarios: Scenario[]
}

export const UNKNOWN_SALT = saltFor('unknown')

export function makePlan(settings: Settings): Plan {
  const [small, medium, large] = settings.sizes
  const sizes = [small, medium, large]
  const runs = settings.rounds + (settings.warmupSeconds > 0 ? 1 : 0)
  const seconds = Math.max(settings.seconds, settings.warmupSeconds)
  const dataset = (name: string, engine: Engine, size: number, extra: Partial<PlannedDataset>) => ({
    name,
    engine,
    size,
    salt: saltFor(name),
    dueTouch: false,
    singleUse: false,
    ...extra,
  })
  const datasets: PlannedDataset[] = sizes.map((size) =>
    dataset(`sqlite${sizeLabel(size)}`, 'sqlite', size, {}),
  )
  datasets.push(
    dataset('logout', 'sqlite', runs * seconds * settings.maxLogoutPerSecond, { singleUse: true }),
    dataset('register', 'sqlite', 0, {}),
    dataset('rawregister', 'sqlite', 0, {}),
  )
  const servers: PlannedServer[] = [{ name: 'bare', what: { kind: 'bare' } }]
  const scenarios: Scenario[] = []
  const get = (
    id: string,
    label: string,
    server: string,
    path: string,
    keys: Scenario['keys'],
    touches: Scenario['touches'] = 'none',
  ) => scenarios.push({ id, label, server, method: 'GET', path, expect: 200, keys, touches })
  // A headline key check: at steady touches, and beside it the same without a touch due.
  const keyCheck = (id: string, label: string, server: string, path: string, dataset: string) => {
    get(id, `${label}, steady touches`, server, path, { from: 'dataset', dataset }, 'steady')
    get(`${id}-notouch`, `${label}, no touch due`, server, path, { from: 'dataset', dataset })
  }
  // The morning rush: single-use keys, every one due a touch (last written yesterday), so the
  // touches of a turn are written together (docs/performance.md).
  const morningRush = (engine: Engine, earlier: boolean) => {
    const suffix = earlier ? '-earlier' : ''
    const name = `${engine === 'sqlite' ? '' : 'pg'}touch${suffix}`
    const database = engine === 'sqlite' ? 'SQLite' : 'PostgreSQL'
    const perSecond = settings.maxTouchPerSecond
    datasets.push(
      dataset(name, engine, runs * seconds * perSecond, {
        singleUse: true,
        dueTouch: true,
        earlier,
      }),
    )
    servers.push({
      name: `cg-${name}`,
      what: { kind: 'campusgate', dataset: name, appRoute: false, earlier },
    })
    get(
      `touch-${engine === 'sqlite' ? 'sqlite' : 'pg'}${suffix}`,
      `GET /session, every key due a touch (morning rush), ${database}${earlier ? ', earlier build' : ''}`,
      `cg-${name}`,
      '/session',
      { from: 'slice', dataset: name, perSecond },
      'due',
    )
  }
  // An earlier build's GET /session beside this one's, same rounds, on a dataset its own
  // migrations made.
  const earlierKeyCheck = (engine: Engine, size: number) => {
    const name = `${engine === 'sqlite' ? 'sqlite' : 'pg'}${sizeLabel(size)}-earlier`
    const database = engine === 'sqlite' ? 'SQLite' : 'PostgreSQL'
    datasets.push(dataset(name, engine, size, { earlier: true }))
    servers.push({
      name: `cg-${name}`,
      what: { kind: 'campusgate', dataset: name, appRoute: false, earlier: true },
    })
    keyCheck(
      `session-${name}`,
      `GET /session, ${database}, ${sizeLabel(size)}, earlier build`,
      `cg-${name}`,
      '/session',
      name,
    )
  }

  get('bare', 'bare Fastify route', 'bare', '/session', {
    from: 'dataset',
    dataset: 'sqlite' + sizeLabel(small),
  })
  for (const size of [small, large]) {
    const name = `sqlite${sizeLabel(size)}`
    servers.push({ name: `raw-${name}`, what: { kind: 'raw', engine: 'sqlite', dataset: name } })
    get(`raw-${name}`, `raw SQLite lookup, ${sizeLabel(size)}`, `raw-${name}`, '/session', {
      from: 'dataset',
      dataset: name,
    })
    servers.push({ name: `keycheck-${name}`, what: { kind: 'keycheck', dataset: name } })
    get(
      `keycheck-${name}`,
      `raw lookup, key-check schema, SQLite, ${sizeLabel(size)}`,
      `keycheck-${name}`,
      '/session',
      { from: 'dataset', dataset: name },
    )
  }
  for (const size of sizes) {
    const name = `sqlite${sizeLabel(size)}`
    servers.push({
      name: `cg-${name}`,
      what: { kind: 'campusgate', dataset: name, appRoute: false },
    })
    servers.push({
      name: `app-${name}`,
      what: { kind: 'campusgate', dataset: name, appRoute: true },
    })
    keyCheck(
      `session-${name}`,
      `GET /session, SQLite, ${sizeLabel(size)}`,
      `cg-${name}`,
      '/session',
      name,
    )
    keyCheck(
      `app-${name}`,
      `app route (requireTier), SQLite, ${sizeLabel(size)}`,
      `app-${name}`,
      '/app/profile',
      name,
    )
  }
  // Every student on two devices: as many sessions as the small dataset, half as many users, so
  // each key check finds one of two sessions of its user (docs/sessions.md, "Devices").
  const devices = (engine: Engine) => {
    const name = `${engine === 'sqlite' ? 'sqlite' : 'pg'}${sizeLabel(small)}-2dev`
    datasets.push(dataset(name, engine, small, { sessionsPerUser: 2 }))
    servers.push({
      name: `cg-${name}`,
      what: { kind: 'campusgate', dataset: name, appRoute: false },
    })
    keyCheck(
      `session-${name}`,
      `GET /session, ${engine === 'sqlite' ? 'SQLite' : 'PostgreSQL'}, ${sizeLabel(small)}, two sessions a user`,
      `cg-${name}`,
      '/session',
      name,
    )
  }
  devices('sqlite')

  // The app's other backends: an Express route guarded by campusgate-node, against the same route
  // calling GET /session with plain fetch, both in front of the small dataset's campusgate.
  const smallName = `sqlite${sizeLabel(small)}`
  for (const mode of ['kit', 'fetch'] as const) {
    const name = `${mode}-express`
    servers.push({ name, what: { kind: 'express-guard', mode, upstream: `cg-${smallName}` } })
    const how = mode === 'kit' ? 'campusgate-node requireTier' : 'GET /session with fetch'
    get(name, `Express route, ${how}, SQLite, ${sizeLabel(small)}`, name, '/profile', {
      from: 'dataset',
      dataset: smallName,
    })
  }
  const largeName = `sqlite${sizeLabel(large)}`
  scenarios.push({
    id: `unknown-${largeName}`,
    label: `GET /session, unknown keys, SQLite, ${sizeLabel(large)}`,
    server: `cg-${largeName}`,
    method: 'GET',
    path: '/session',
    expect: 401,
    touches: 'none',
    keys: { from: 'dataset', dataset: largeName, salt: UNKNOWN_SALT },
  })
  morningRush('sqlite', false)
  servers.push({
    name: 'cg-logout',
    what: { kind: 'campusgate', dataset: 'logout', appRoute: false },
  })
  scenarios.push({
    id: 'logout-sqlite',
    label: 'POST /logout, SQLite',
    server: 'cg-logout',
    method: 'POST',
    path: '/logout',
    expect: 200,
    touches: 'none',
    keys: { from: 'slice', dataset: 'logout', perSecond: settings.maxLogoutPerSecond },
  })
  servers.push({
    name: 'cg-register',
    what: { kind: 'campusgate', dataset: 'register', appRoute: false, messenger: true },
  })
  scenarios.push({
    id: 'register-sqlite',
    label: 'POST /register/messenger, SQLite',
    server: 'cg-register',
    method: 'POST',
    path: '/register/messenger',
    expect: 200,
    touches: 'none',
    keys: { from: 'code' },
  })
  servers.push({
    name: 'raw-rawregister',
    what: { kind: 'raw', engine: 'sqlite', dataset: 'rawregister' },
  })
  scenarios.push({
    id: 'raw-register-sqlite',
    label: 'raw SQLite INSERTs of a registration',
    server: 'raw-rawregister',
    method: 'POST',
    path: '/register',
    expect: 200,
    touches: 'none',
    keys: { from: 'code' },
  })

  // The earlier build beside this one, same rounds: the key check (both ways) and registration.
  if (settings.earlierBuild !== null) {
    for (const size of [small, large]) earlierKeyCheck('sqlite', size)
    morningRush('sqlite', true)
    datasets.push(dataset('register-earlier', 'sqlite', 0, { earlier: true }))
    servers.push({
      name: 'cg-register-earlier',
      what: {
        kind: 'campusgate',
        dataset: 'register-earlier',
        appRoute: false,
        messenger: true,
        earlier: true,
      },
    })
    scenarios.push({
      id: 'register-sqlite-earlier',
      label: 'POST /register/messenger, SQLite, earlier build',
      server: 'cg-register-earlier',
      method: 'POST',
      path: '/register/messenger',
      expect: 200,
      touches: 'none',
      keys: { from: 'code' },
    })
  }

  if (settings.postgresUrl !== null) {
    for (const size of [small, large]) {
      const name = `pg${sizeLabel(size)}`
      datasets.push(dataset(name, 'postgres', size, {}))
      servers.push({
        name: `raw-${name}`,
        what: { kind: 'raw', engine: 'postgres', dataset: name },
      })
      servers.push({
        name: `cg-${name}`,
        what: { kind: 'campusgate', dataset: name, appRoute: false },
      })
      get(`raw-${name}`, `raw prepared pg lookup, ${sizeLabel(size)}`, `raw-${name}`, '/session', {
        from: 'dataset',
        dataset: name,
      })
      keyCheck(
        `session-${name}`,
        `GET /session, PostgreSQL, ${sizeLabel(size)}`,
        `cg-${name}`,
        '/session',
        name,
      )
    }
    devices('postgres')
    morningRush('postgres', false)
    // PostgreSQL's key check and morning rush of the earlier build beside this one's, same rounds.
    if (settings.earlierBuild !== null) {
      for (const size of [small, large]) earlierKeyCheck('postgres', size)
      morningRush('postgres', true)
    }
    const pgLarge = `pg${sizeLabel(large)}`
    servers.push({
      name: `app-${pgLarge}`,
      what: { kind: 'campusgate', dataset: pgLarge, appRoute: true },
    })
    keyCheck(
      `app-${pgLarge}`,
      `app route (requireTier), PostgreSQL, ${sizeLabel(large)}`,
      `app-${pgLarge}`,
      '/app/profile',
      pgLarge,
    )
    datasets.push(dataset('pgregister', 'postgres', 0, {}))
    servers.push({
      name: 'cg-pgregister',
      what: { kind: 'campusgate', dataset: 'pgregister', appRoute: false, messenger: true },
    })
    scenarios.push({
      id: 'register-pg',
      label: 'POST /register/messenger, PostgreSQL',
      server: 'cg-pgregister',
      method: 'POST',
      path: '/register/messenger',
      expect: 200,
      touches: 'none',
      keys: { from: 'code' },
    })
  }

  servers.push({ name: 'ba-node', what: { kind: 'better-auth', mode: 'node' } })
  servers.push({ name: 'ba-fastify', what: { kind: 'better-auth', mode: 'fastify' } })
  get(
    'better-auth',
    'better-auth get-session (toNodeHandler)',
    'ba-node',
    '/api/auth/get-session',
    {
      from: 'file',
      file: 'plain',
    },
  )
  get(
    'better-auth-cached',
    'better-auth in Fastify, cookie cache',
    'ba-fastify',
    '/api/auth/get-session',
    { from: 'file', file: 'cached' },
  )
  return { datasets, servers, scenarios }
}
