import { isIP } from 'node:net'
import { type Env, fail, type Problems, read } from './problems.js'

// The value kinds every section's variables are made of; each throws (through `fail`) a line that
// names its variable.

const DURATION_UNITS_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const

/** Parses durations such as `30d`, `30m`, `2s` or `500ms` into milliseconds. */
export function parseDuration(value: string): number | null {
  const match = /^(\d{1,9})(ms|s|m|h|d)$/.exec(value.trim())
  if (!match) return null
  const ms = Number(match[1]) * DURATION_UNITS_MS[match[2] as keyof typeof DURATION_UNITS_MS]
  return ms > 0 ? ms : null
}

/** A duration of at most `max` (also a duration): no value overflows a date or a counter. */
export function duration(env: Env, name: string, fallback: string, max: string): number {
  const raw = read(env, name) ?? fallback
  const ms =
    parseDuration(raw) ?? fail(name, `"${raw}" is not a duration like 30d, 30m, 2s or 500ms`)
  if (ms > parseDuration(max)!) fail(name, `"${raw}" is longer than the ${max} allowed`)
  return ms
}

/** A duration that is off (null) when its variable is unset. */
export function optionalDuration(env: Env, name: string, max: string): number | null {
  const raw = read(env, name)
  return raw === undefined ? null : duration(env, name, raw, max)
}

/** An http(s) URL; base URLs lose trailing slashes, provider endpoints are kept exactly. */
export function httpUrl(
  env: Env,
  name: string,
  fallback?: string,
  kind: 'base' | 'endpoint' = 'base',
): string | undefined {
  const raw = read(env, name) ?? fallback
  if (raw === undefined) return undefined
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return fail(name, `"${raw}" is not a URL`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') fail(name, 'must be an http(s) URL')
  return kind === 'base' ? raw.replace(/\/+$/, '') : raw
}

export function integer(
  env: Env,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number {
  const raw = read(env, name)
  if (raw === undefined) return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < min || value > max) {
    fail(name, `"${raw}" is not a whole number from ${min} to ${max}`)
  }
  return value
}

export function oneOf<T extends string>(
  env: Env,
  name: string,
  values: readonly T[],
  fallback: T,
): T {
  const raw = read(env, name) ?? fallback
  if (!(values as readonly string[]).includes(raw)) {
    fail(name, `must be ${values.map((value) => `"${value}"`).join(' or ')}`)
  }
  return raw as T
}

export function optionalOneOf<T extends string>(
  env: Env,
  name: string,
  values: readonly T[],
): T | null {
  return read(env, name) === undefined ? null : oneOf(env, name, values, values[0])
}

/** A comma list, items trimmed, empty items dropped; null when unset. */
export function list(env: Env, name: string): string[] | null {
  const raw = read(env, name)
  if (raw === undefined) return null
  return raw
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '')
}

export function ipList(env: Env, name: string): string[] {
  const items = list(env, name) ?? []
  for (const item of items) {
    const [address, bits, ...rest] = item.split('/')
    const family = isIP(address ?? '')
    const bitsOk =
      bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= (family === 6 ? 128 : 32))
    if (family === 0 || !bitsOk || rest.length > 0)
      fail(name, `"${item}" is not an IP address or CIDR`)
  }
  return items
}

/**
 * The readers of a variable with a default, each writing the default once: a bad value is
 * recorded (`guard`) and the default stands in, so reading goes on to name every bad variable.
 */
export function withDefaults(env: Env, { guard }: Pick<Problems, 'guard'>) {
  return {
    duration: (name: string, fallback: string, max: string): number =>
      guard(parseDuration(fallback)!, () => duration(env, name, fallback, max)),
    integer: (name: string, fallback: number, min: number, max: number): number =>
      guard(fallback, () => integer(env, name, fallback, min, max)),
    oneOf: <T extends string>(name: string, values: readonly T[], fallback: T): T =>
      guard(fallback, () => oneOf(env, name, values, fallback)),
  }
}
