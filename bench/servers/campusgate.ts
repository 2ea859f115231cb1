// campusgate from its build (dist/, what `npm start` runs), configured from the environment exactly
// as src/main.ts does, plus what an app built on campusgate adds: one route of its own behind
// `requireTier`. Usage: node --import tsx bench/servers/campusgate.ts  (the service's variables)
import { loadDist } from '../harness/dist.js'

const {
  app: appModule,
  clock,
  config: configModule,
  database,
  migrate,
  secretsAtRest,
} = await loadDist()

const loaded = configModule.loadConfig(process.env)
// Only for a build that predates RATE_LIMIT_PER_ADDRESS=0: lift the per-address limits by hand.
const config =
  process.env.BENCH_LIFT_RATE_LIMITS === '1'
    ? { ...loaded, rateLimit: { ...loaded.rateLimit, globalMax: 1e9, sensitiveMax: 1e9 } }
    : loaded
const db = database.createDb(config.database.url, { poolSize: config.database.poolSize })
await migrate.migrateToLatest(db)
const { cipher } = secretsAtRest.cipherFor(config)
const { app } = await appModule.buildApp({ config, db, clock: clock.systemClock, cipher })

app.get(
  '/app/profile',
  { onRequest: app.requireTier('messenger-registered') },
  async (request) => ({ openId: request.session!.openId, tier: request.session!.tier }),
)

await app.listen({ port: config.server.port, host: config.server.host })
process.on('SIGTERM', () => {
  void app
    .close()
    .then(() => db.kysely.destroy())
    .then(() => process.exit(0))
})
