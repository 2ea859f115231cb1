import { systemClock } from '../clock.js'
import { cipherFor } from '../secrets-at-rest.js'
import { EXIT, type Command } from './command.js'
import { stopOnSignals } from './shutdown.js'
import { startupSummary } from './summary.js'

/** `campusgate serve` (and `npm start`): migrate, then serve until SIGINT or SIGTERM. */
export const serve: Command = {
  name: 'serve',
  summary: 'migrate the database, then serve the API (what `npm start` runs)',
  usage: '  campusgate serve',
  options: {},
  async run({ config, io }) {
    // A stop asked for while starting (a container stopped during its migrations): Node as PID 1
    // ignores a signal nothing listens to, so it is heard from the start, and honoured once a
    // migration in progress has finished (SQLite's are not one transaction: never cut one short).
    let stopAsked: NodeJS.Signals | null = null
    const askStop = (signal: NodeJS.Signals): void => void (stopAsked ??= signal)
    const signals: NodeJS.Signals[] = ['SIGTERM', 'SIGINT']
    for (const signal of signals) process.on(signal, askStop)
    // Loaded when it runs, not when the command line is read (maintenance.ts).
    const [{ buildApp }, { createDb }, { migrateForStart }] = await Promise.all([
      import('../app.js'),
      import('../db/database.js'),
      import('../db/migrate.js'),
    ])
    const db = createDb(config.database.url, { poolSize: config.database.poolSize })
    const { unknown } = await migrateForStart(db)
    // A person at a terminal reads lines, a log collector reads JSON.
    // Loaded only for a terminal: a service under a supervisor starts without it.
    const logStream = io.interactive
      ? (await import('pino-pretty')).default({
          colorize: true,
          translateTime: 'SYS:HH:MM:ss',
          ignore: 'pid,hostname',
        })
      : undefined
    const { cipher, createdKeyFile } = cipherFor(config)
    const { app, stopBeingReady } = await buildApp({
      config,
      db,
      clock: systemClock,
      cipher,
      ...(logStream === undefined ? {} : { logStream }),
    })
    if (stopAsked !== null) {
      for (const signal of signals) process.off(signal, askStop)
      app.log.info({ signal: stopAsked }, 'stopped while starting: not serving')
      await app.close()
      await db.kysely.destroy()
      return EXIT.ok
    }
    if (unknown.length > 0) {
      // A newer release migrated this database: its migrations keep what this one reads
      // (docs/operations.md, "Upgrades and rollbacks").
      app.log.warn(
        { unknownMigrations: unknown },
        `the database holds migrations this build does not know (${unknown.join(', ')}): ` +
          'serving on the schema of a newer release',
      )
    }
    if (createdKeyFile !== null) {
      app.log.warn(
        { keyFile: createdKeyFile },
        'no DATA_ENCRYPTION_KEY: generated a development key in the key file (set DATA_ENCRYPTION_KEY in production)',
      )
    }
    const address = await app.listen({ port: config.server.port, host: config.server.host })
    if (io.interactive) io.out(startupSummary(config, address))
    if (config.sandbox.messenger || config.sandbox.university) {
      app.log.warn(
        { sandbox: config.sandbox },
        `sandbox mode: simulated providers under ${config.server.publicBaseUrl}/_sandbox/ — ` +
          `open it for the walk-through, or mint a login code with ` +
          `curl -X POST ${config.server.publicBaseUrl}/_sandbox/messenger/login-codes`,
      )
    }

    stopOnSignals({ app, db, stopBeingReady, delayMs: config.server.shutdownDelayMs })
    for (const signal of signals) process.off(signal, askStop)
    // Asked while it began to listen: the shutdown's own handler hears it now.
    if (stopAsked !== null) process.kill(process.pid, stopAsked)
    return null
  },
}
