import { WEBHOOK_POLL_INTERVAL_MS, WEBHOOK_TRY_TIMEOUT_MS } from './constants.js'
import type { WebhookConfig } from './types.js'
import { type Env, fail, type Problems } from './problems.js'
import { list, withDefaults } from './readers.js'

/** A further rule for each endpoint (production.ts's): the problem, or null when it holds. */
export type EndpointRule = (url: URL, raw: string) => string | null

/**
 * WEBHOOK_URL, WEBHOOK_SECRET, WEBHOOK_RETRY_FOR. Secrets are Standard Webhooks' `whsec_` and the
 * base64 of 24 to 64 bytes (its recommended sizes); messages never repeat one.
 */
export function readWebhooks(
  env: Env,
  { guard }: Problems,
  endpointRule: EndpointRule | null,
): WebhookConfig {
  const endpoints = guard([], () => webhookEndpoints(env, endpointRule))
  const secrets = guard([], () => webhookSecrets(env))
  guard(undefined, () => {
    if (endpoints.length > 0 && secrets.length === 0) {
      fail('WEBHOOK_SECRET', 'is required when WEBHOOK_URL is set (every event is signed)')
    }
  })
  return Object.freeze({
    endpoints: Object.freeze(endpoints),
    secrets: Object.freeze(secrets),
    retryForMs: withDefaults(env, { guard }).duration('WEBHOOK_RETRY_FOR', '3d', '30d'),
    tryTimeoutMs: WEBHOOK_TRY_TIMEOUT_MS,
    pollIntervalMs: WEBHOOK_POLL_INTERVAL_MS,
  })
}

function webhookEndpoints(env: Env, endpointRule: EndpointRule | null): string[] {
  const endpoints = (list(env, 'WEBHOOK_URL') ?? []).map((raw) => {
    let url: URL
    try {
      url = new URL(raw)
    } catch {
      return fail('WEBHOOK_URL', `"${raw}" is not a URL`)
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      fail('WEBHOOK_URL', `"${raw}" is not an http(s) URL`)
    }
    if (url.username !== '' || url.password !== '') {
      fail(
        'WEBHOOK_URL',
        'must not carry a user name or password (WEBHOOK_SECRET signs every event)',
      )
    }
    const problem = endpointRule?.(url, raw) ?? null
    if (problem !== null) fail('WEBHOOK_URL', problem)
    return raw
  })
  if (new Set(endpoints).size !== endpoints.length) fail('WEBHOOK_URL', 'names an endpoint twice')
  return endpoints
}

function webhookSecrets(env: Env): string[] {
  return (list(env, 'WEBHOOK_SECRET') ?? []).map((item, index) => {
    const base64 = item.startsWith('whsec_') ? item.slice('whsec_'.length) : null
    const bytes =
      base64 !== null && /^[A-Za-z0-9+/]+={0,2}$/.test(base64) && base64.length % 4 === 0
        ? Buffer.from(base64, 'base64').length
        : 0
    if (bytes < 24 || bytes > 64) {
      fail(
        'WEBHOOK_SECRET',
        `secret ${index + 1} is not whsec_ and the base64 of 24 to 64 bytes (make one with: echo whsec_$(openssl rand -base64 32))`,
      )
    }
    return item
  })
}
