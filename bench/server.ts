// A campusgate process for benchmarks: configured from the environment like `npm start`, with
// the rate limits lifted so the load generator measures the service, not the limiter.
import { buildApp } from '../src/app.js'
import { systemClock } from '../src/clock.js'
import { loadConfig } from '../src/config.js'
import { createDb } from '../src/db/database.js'
import { migrateToLatest } from '../src/db/migrate.js'
import { cipherFor } from '../src/secrets-at-rest.js'

const loaded = loadConfig(process.env)
const config = { ...loaded, rateLimit: { ...loaded.rateLimit, globalMax: 1e9, sensitiveMax: 1e9 } }
const db = createDb(config.databaseUrl, { poolSize: config.databasePoolSize })
await migrateToLatest(db)
const { app } = await buildApp({ config, db, clock: systemClock, cipher: cipherFor(config).cipher })
await app.listen({ port: config.port, host: '127.0.0.1' })
process.on('SIGTERM', () => {
  void app
    .close()
    .then(() => db.kysely.destroy())
    .then(() => process.exit(0))
})
