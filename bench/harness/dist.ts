// campusgate's build (dist/), what `npm start` runs: bench code loads the service from there,
// with the sources' types.
import { join, sep } from 'node:path'
import { pathToFileURL } from 'node:url'

import type * as App from '../../src/app.js'
import type * as Clock from '../../src/clock.js'
import type * as Config from '../../src/config.js'
import type * as Database from '../../src/db/database.js'
import type * as Migrate from '../../src/db/migrate.js'
import type * as RequestLog from '../../src/http/request-log.js'
import type * as Secrets from '../../src/lib/secrets.js'
import type * as SessionRows from '../../src/sessions/rows.js'
import type * as PostgresKeyChecks from '../../src/sessions/store-postgres.js'
import type * as SecretsAtRest from '../../src/secrets-at-rest.js'

export interface Dist {
  app: typeof App
  clock: typeof Clock
  config: typeof Config
  database: typeof Database
  migrate: typeof Migrate
  secrets: typeof Secrets
  requestLog: typeof RequestLog
  secretsAtRest: typeof SecretsAtRest
}

const DIST = new URL('../../dist/', import.meta.url)

/** This build's, or that of the checkout at `root` (an earlier build, BENCH_EARLIER_BUILD). */
export async function loadDist(root?: string): Promise<Dist> {
  const dist = root === undefined ? DIST : pathToFileURL(join(root, 'dist') + sep)
  const load = (path: string): Promise<any> => import(new URL(path, dist).href)
  const [app, clock, config, database, migrate, secrets, requestLog, secretsAtRest] =
    await Promise.all([
      load('app.js'),
      load('clock.js'),
      load('config.js'),
      load('db/database.js'),
      load('db/migrate.js'),
      load('lib/secrets.js'),
      load('http/request-log.js'),
      load('secrets-at-rest.js'),
    ])
  return { app, clock, config, database, migrate, secrets, requestLog, secretsAtRest }
}

/**
 * This build's statements of the key check, as the service compiles them (bench:lookup and
 * bench:plans run them). Not part of `Dist`: the earlier builds a bench compares with do not all
 * have these modules.
 */
export async function loadKeyCheckStatements(): Promise<{
  rows: typeof SessionRows
  postgres: typeof PostgresKeyChecks
}> {
  const [rows, postgres] = await Promise.all([
    import(new URL('sessions/rows.js', DIST).href) as Promise<typeof SessionRows>,
    import(new URL('sessions/store-postgres.js', DIST).href) as Promise<typeof PostgresKeyChecks>,
  ])
  return { rows, postgres }
}
