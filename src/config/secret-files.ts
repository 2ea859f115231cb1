import { readFileSync } from 'node:fs'
import { type Env, type Problems, read } from './problems.js'

/**
 * The variables that hold a secret: each also reads from a file named by `NAME_FILE` (a Docker or
 * Kubernetes secret mounted as a file), so the secret need not sit in the environment
 * (README, "Secrets from files").
 */
export const SECRET_VARIABLES = [
  'DATABASE_URL',
  'REDIS_URL',
  'SMTP_URL',
  'DATA_ENCRYPTION_KEY',
  'MESSENGER_APP_SECRETS',
  'UNIVERSITY_CLIENT_SECRET',
  'UNIVERSITY_SAML_SP_KEY',
  'METRICS_TOKEN',
  'WEBHOOK_SECRET',
  'BACKEND_CREDENTIALS',
] as const

/**
 * `env` with each secret of a `NAME_FILE` in place of `NAME`: the file's text, one trailing newline
 * dropped (what `echo` and editors leave). Both set is refused naming both: which one wins would
 * be a guess. A file that cannot be read is refused naming `NAME_FILE`. The configuration pass is
 * the only reader of these files.
 */
export function withSecretFiles(env: Env, { report }: Pick<Problems, 'report'>): Env {
  const resolved: Record<string, string | undefined> = {}
  for (const name of SECRET_VARIABLES) {
    const fileVariable = `${name}_FILE`
    const path = read(env, fileVariable)
    if (path === undefined) continue
    if (read(env, name) !== undefined) {
      report(name, `${name} and ${fileVariable} are both set; set one of them`)
      continue
    }
    try {
      resolved[name] = readFileSync(path, 'utf8').replace(/\r?\n$/, '')
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? 'unreadable'
      report(fileVariable, `cannot read ${JSON.stringify(path)} (${code})`)
    }
  }
  if (Object.keys(resolved).length === 0) return env
  return new Proxy(env, {
    get: (target, name) =>
      typeof name === 'string' && Object.hasOwn(resolved, name)
        ? resolved[name]
        : (target as Record<string | symbol, string | undefined>)[name],
  })
}
