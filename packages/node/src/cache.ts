import { createHash } from 'node:crypto'
import type { Session } from './session.js'

export interface CacheOptions {
  /** How long a checked key is believed without asking campusgate again. */
  ttlMs: number
  /** How many keys are remembered; the least recently used go first. */
  max: number
}

interface Entry {
  session: Session
  until: number
}

/**
 * Sessions by key, so a busy backend asks campusgate less often. Keys are held only as their
 * SHA-256 (a heap dump gives no usable key). Each user's keys are indexed by openId, so the
 * lifecycle events can drop them.
 */
export class SessionCache {
  private readonly entries = new Map<string, Entry>()
  private readonly byOpenId = new Map<string, Set<string>>()

  constructor(private readonly options: CacheOptions) {
    if (!(options.ttlMs > 0) || !Number.isInteger(options.max) || options.max < 1) {
      throw new TypeError('cache: ttlMs must be > 0 and max a whole number >= 1')
    }
  }

  get size(): number {
    return this.entries.size
  }

  get(key: string): Session | null {
    const id = digest(key)
    const entry = this.entries.get(id)
    if (entry === undefined) return null
    if (entry.until <= Date.now()) {
      this.remove(id, entry)
      return null
    }
    // Most recently used last: Map keeps insertion order.
    this.entries.delete(id)
    this.entries.set(id, entry)
    return entry.session
  }

  set(key: string, session: Session): void {
    const id = digest(key)
    const previous = this.entries.get(id)
    if (previous !== undefined) this.remove(id, previous)
    // Not capped at the session's expiresAt: that is campusgate's clock, and a key in use keeps
    // extending it. A short ttlMs bounds how long an ended key is believed without its event.
    this.entries.set(id, { session, until: Date.now() + this.options.ttlMs })
    let ids = this.byOpenId.get(session.openId)
    if (ids === undefined) this.byOpenId.set(session.openId, (ids = new Set()))
    ids.add(id)
    while (this.entries.size > this.options.max) {
      const [oldest, entry] = this.entries.entries().next().value as [string, Entry]
      this.remove(oldest, entry)
    }
  }

  /** Forgets every key of one user. */
  dropUser(openId: string): void {
    for (const id of this.byOpenId.get(openId) ?? []) this.entries.delete(id)
    this.byOpenId.delete(openId)
  }

  private remove(id: string, entry: Entry): void {
    this.entries.delete(id)
    const ids = this.byOpenId.get(entry.session.openId)
    ids?.delete(id)
    if (ids?.size === 0) this.byOpenId.delete(entry.session.openId)
  }
}

function digest(key: string): string {
  return createHash('sha256').update(key).digest('base64')
}
