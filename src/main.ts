import { buildApp } from './app.js'
import { systemClock } from './clock.js'
import { ConfigError, loadConfig, type Config } from './config.js'
import { createDb } from './db/database.js'
import { migrateToLatest } from './db/migrate.js'
import { describeError } from './lib/describe-error.js'
import { cipherFor } from './secrets-at-rest.js'

function configOrExit(): Config {
  try {
    return loadConfig(process.env)
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`campusgate: invalid configuration: ${error.message}\n`)
      process.exit(1)
    }
    throw error
  }
}

async function migrateOnly(config: Config): Promise<void> {
  const db = createDb(config.databaseUrl, { poolSize: config.databasePoolSize })
  const applied = await migrateToLatest(db)
  process.stdout.write(
    applied.length === 0 ? 'schema is up to date\n' : `applied ${applied.join(', ')}\n`,
  )
  await db.kysely.destroy()
}

async function serve(config: Config): Promise<void> {
  const db = createDb(config.databaseUrl, { poolSize: config.databasePoolSize })
  await migrateToLatest(db)
  const { cipher, createdKeyFile } = cipherFor(config)
  const { app } = await buildApp({ config, db, clock: systemClock, cipher })
  if (createdKeyFile !== null) {
    app.log.warn(
      { keyFile: createdKeyFile },
      'no DATA_ENCRYPTION_KEY: generated a development key in the key file (set DATA_ENCRYPTION_KEY in production)',
    )
  }
  await app.listen({ port: config.port, host: config.host })
  if (config.sandbox.messenger || config.sandbox.university) {
    app.log.warn(
      { sandbox: config.sandbox },
      `sandbox mode: simulated providers under ${config.publicBaseUrl}/_sandbox/ — ` +
        `open it for the walk-through, or mint a login code with ` +
        `curl -X POST ${config.publicBaseUrl}/_sandbox/messenger/login-codes`,
    )
  }

  let closing = false
  const shutdown = (signal: string): void => {
    if (closing) return
    closing = true
    app.log.info({ signal }, 'shutting down')
    app
      .close()
      .then(() => db.kysely.destroy())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          app.log.error({ err: error }, 'shutdown failed')
          process.exit(1)
        },
      )
  }
  process.on('SIGINT', () => shutdown('SIGINT'))
  process.on('SIGTERM', () => shutdown('SIGTERM'))
}

const config = configOrExit()
const run = process.argv[2] === 'migrate' ? migrateOnly(config) : serve(config)
run.catch((error: unknown) => {
  process.stderr.write(`campusgate: ${describeError(error)}\n`)
  process.exit(1)
})
