import type { ServerConfig } from './types.js'
import { type Env, fail, type Problems, read } from './problems.js'
import { duration, httpUrl, integer, ipList, withDefaults } from './readers.js'

/**
 * Where the service listens, how it is reached and how it stops: PORT, HOST, PUBLIC_BASE_URL,
 * TRUST_PROXY, REQUEST_TIMEOUT, SHUTDOWN_DELAY.
 */
export function readServer(env: Env, { guard }: Problems): ServerConfig {
  const setting = withDefaults(env, { guard })
  const port = setting.integer('PORT', 3000, 0, 65535)
  const host = read(env, 'HOST') ?? '127.0.0.1'
  const linkHost = host === '0.0.0.0' || host === '::' ? 'localhost' : host
  const hostInUrl = linkHost.includes(':') ? `[${linkHost}]` : linkHost
  const defaultBaseUrl = `http://${hostInUrl}:${port}`
  return Object.freeze({
    port,
    host,
    publicBaseUrl: guard(defaultBaseUrl, () => httpUrl(env, 'PUBLIC_BASE_URL', defaultBaseUrl)!),
    ...guard<Pick<ServerConfig, 'trustProxy' | 'clientAddressHeader'>>(
      { trustProxy: false, clientAddressHeader: null },
      () => trustProxy(env),
    ),
    requestTimeoutMs: setting.duration('REQUEST_TIMEOUT', '30s', '10m'),
    shutdownDelayMs: guard(0, () => shutdownDelay(env)),
  })
}

/**
 * `true` would take the client's own `X-Forwarded-For` as its address, so anyone could pick the
 * address that rate limits and UNIVERSITY_CALLBACK_ALLOWED_IPS see; so it is refused. A hop count
 * trusts that many proxies, counted from the right of the header. `… via NAME` reads that header
 * in place of `X-Forwarded-For`, for a gateway that names the client in its own (WeChat Cloud
 * Hosting's `X-Original-Forwarded-For`; docs/deployment.md, "Reverse proxy and TRUST_PROXY").
 */
function trustProxy(env: Env): Pick<ServerConfig, 'trustProxy' | 'clientAddressHeader'> {
  const raw = read(env, 'TRUST_PROXY')
  if (raw === undefined || raw === 'false') return { trustProxy: false, clientAddressHeader: null }
  const via = /^(.*?)\s+via\s+(\S+)$/i.exec(raw)
  const trust = via === null ? raw : via[1].trim()
  // As the operator wrote it, for the messages; compared lower-case, as Node gives headers.
  const named = via === null ? null : via[2]
  const header = named === null ? null : named.toLowerCase()
  if (header !== null && !HEADER_NAME.test(header)) {
    fail('TRUST_PROXY', `"${named}" is not a header name`)
  }
  if (trust === 'true') {
    fail(
      'TRUST_PROXY',
      '"true" would let any client choose its own address through X-Forwarded-For; give the number of proxies in front (e.g. 1) or their addresses / CIDRs',
    )
  }
  const proxies = /^\d+$/.test(trust)
    ? integer({ TRUST_PROXY: trust }, 'TRUST_PROXY', 0, 0, 16) || false
    : ipList({ TRUST_PROXY: trust }, 'TRUST_PROXY')
  if (proxies === false && named !== null) {
    fail('TRUST_PROXY', `"via ${named}" needs the proxies to trust before it (e.g. 1 via ${named})`)
  }
  return { trustProxy: proxies, clientAddressHeader: header }
}

/** An HTTP header name (RFC 9110 token), lower-case. */
const HEADER_NAME = /^[a-z0-9!#$%&'*+.^_`|~-]+$/

/**
 * SHUTDOWN_DELAY: how long the listener keeps serving after SIGTERM while /readyz says not ready,
 * for the load balancer to stop sending (docs/operations.md, "Stopping"). Unset or zero: none.
 */
function shutdownDelay(env: Env): number {
  const raw = read(env, 'SHUTDOWN_DELAY')
  if (raw === undefined || /^0+(ms|s|m|h|d)?$/.test(raw.trim())) return 0
  return duration(env, 'SHUTDOWN_DELAY', raw, '5m')
}
