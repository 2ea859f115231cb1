import type { Platform } from './platform.js'

/**
 * What every kit instance on one platform with one `storageKey` shares: the login in flight, and
 * the key that storage refused. Each page of a mini-program may create its own instance; were the
 * login per instance, two pages renewing at once would each register, and the second registration
 * would end the first's key.
 */
export interface SharedLogin {
  pending: Promise<string> | null
  /** A key the platform's storage refused: used instead of storage until a later one is stored. */
  inMemory: string | null
}

const shared = new WeakMap<Platform, Map<string, SharedLogin>>()

export function sharedLogin(platform: Platform, storageKey: string): SharedLogin {
  let byKey = shared.get(platform)
  if (byKey === undefined) {
    byKey = new Map()
    shared.set(platform, byKey)
  }
  let slot = byKey.get(storageKey)
  if (slot === undefined) {
    slot = { pending: null, inMemory: null }
    byKey.set(storageKey, slot)
  }
  return slot
}
