import type { Config } from '../config.js'
import { isLoopbackHost } from '../lib/loopback.js'
import { SYSTEM, type AuditEvent } from './audit.js'

/**
 * The settings an operator should know the service started with because they weaken a guarantee.
 * Recorded once per start, so the trail shows when such a setting was in force.
 */
export function securityConfigurationEvents(config: Config): AuditEvent[] {
  const findings: [setting: string, note: string][] = []
  if (config.sandbox.messenger || config.sandbox.university) {
    findings.push(['sandbox', 'simulated providers are served under /_sandbox/'])
  }
  if (config.university.callbackBinding === 'none') {
    findings.push([
      'UNIVERSITY_CALLBACK_BINDING',
      'none: callbacks are bound to UNIVERSITY_CALLBACK_ALLOWED_IPS, not to the browser',
    ])
  }
  if (config.operations.metricsToken === null && !isLoopbackHost(config.server.host)) {
    findings.push(['METRICS_TOKEN', 'unset: /metrics is open on a non-loopback address'])
  }
  if (
    config.server.publicBaseUrl.startsWith('http:') &&
    !isLoopbackHost(new URL(config.server.publicBaseUrl).hostname)
  ) {
    findings.push(['PUBLIC_BASE_URL', 'http: links and the attempt cookie travel unencrypted'])
  }
  return findings.map(([setting, note]) => ({
    type: 'security-configuration',
    origin: SYSTEM,
    detail: { setting, note },
  }))
}
