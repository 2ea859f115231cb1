import type { OperationsConfig } from './types.js'
import { type Env, fail, type Problems, read } from './problems.js'
import { withDefaults } from './readers.js'

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

/** What the operator sees and keeps: LOG_LEVEL, METRICS_TOKEN, AUDIT_RETENTION. */
export function readOperations(env: Env, { guard, report }: Problems): OperationsConfig {
  const logLevel = read(env, 'LOG_LEVEL') ?? 'info'
  if (!LOG_LEVELS.includes(logLevel)) report('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}`)
  return Object.freeze({
    logLevel,
    metricsToken: guard(null, () => metricsToken(env)),
    auditRetentionMs: withDefaults(env, { guard }).duration('AUDIT_RETENTION', '90d', '3650d'),
  })
}

/** A guessable token would open the metrics to anyone; a long one is no credential of ours. */
function metricsToken(env: Env): string | null {
  const raw = read(env, 'METRICS_TOKEN')
  if (raw === undefined) return null
  if (raw.length < 16 || raw.length > 256) fail('METRICS_TOKEN', 'must be 16 to 256 characters')
  return raw
}
