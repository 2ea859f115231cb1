import { readBackends } from './config/backends.js'
import { readBackups } from './config/backups.js'
import { readConsole } from './config/console.js'
import { readDatabase } from './config/database.js'
import { readMail } from './config/mail.js'
import { messengerConfig, readMessenger } from './config/messenger.js'
import { readOperations } from './config/operations.js'
import { collectProblems, type Env } from './config/problems.js'
import { checkProduction, isProduction, productionWebhookEndpoint } from './config/production.js'
import { readRateLimits } from './config/rate-limits.js'
import { decideSandbox } from './config/sandbox.js'
import { withSecretFiles } from './config/secret-files.js'
import { readSecrets } from './config/secrets.js'
import { readServer } from './config/server.js'
import { readSessions } from './config/sessions.js'
import type { Config } from './config/types.js'
import { readUniversity, readUniversityProvider } from './config/university.js'
import { readWebhooks } from './config/webhooks.js'

export { ConfigError } from './config/problems.js'
export { parseDuration } from './config/readers.js'
export type * from './config/types.js'

/**
 * Reads the whole configuration from the environment in one pass: each section of config/ reads
 * its variables, production.ts adds NODE_ENV=production's rules, and every bad variable is named
 * at once (`ConfigError`). A secret's `NAME_FILE` stands for `NAME` (secret-files.ts). `main.ts` is the only caller that passes `process.env`; tests pass plain
 * objects. Sections are read in this order, and their problems are listed in it.
 */
export function loadConfig(given: Env): Config {
  const problems = collectProblems()
  // Secrets given as files (NAME_FILE) are read here and nowhere else.
  const env = withSecretFiles(given, problems)
  const production = isProduction(env)
  const server = readServer(env, problems)
  const messenger = readMessenger(env, problems)
  const provider = readUniversityProvider(env, problems)
  const sandbox = decideSandbox(problems, production, provider, messenger.apiBaseUrl)
  const sandboxBase = `${server.publicBaseUrl}/_sandbox`
  const mail = readMail(env, problems)
  // The production rules judge the sections above; run here, their lines come where they always did.
  if (production) {
    checkProduction(env, problems, {
      publicBaseUrl: server.publicBaseUrl,
      university: provider,
      messenger,
    })
  }
  const university = readUniversity(env, problems, provider, {
    simulated: sandbox.university,
    sandboxBase,
    publicBaseUrl: server.publicBaseUrl,
  })
  const sessions = readSessions(env, problems)
  const operations = readOperations(env, problems)
  const database = readDatabase(env, problems)
  const config: Config = Object.freeze({
    server,
    database,
    mail,
    messenger: messengerConfig(messenger, sandbox.messenger ? `${sandboxBase}/messenger` : null),
    university,
    sandbox,
    sessions,
    operations,
    secrets: readSecrets(env, problems, database.url),
    rateLimit: readRateLimits(env, problems),
    backups: readBackups(env, problems, database.url),
    webhook: readWebhooks(env, problems, production ? productionWebhookEndpoint : null),
    console: readConsole(env, problems),
    backends: readBackends(env, problems),
  })
  problems.done()
  return config
}
