import { CampusgateError, STORAGE_FAILED } from './error.js'
import type { Platform } from './platform.js'

/**
 * What every kit instance on one platform with one `storageKey` shares: the login in flight, and
 * the key that storage refused. Each page of a mini-program may create its own instance; were the
 * login per instance, two pages renewing at once would each register, and the second registration
 * would end the first's key.
 */
interface Shared {
  pending: Promise<string> | null
  /** A key the platform's storage refused: used instead of storage until a later one is stored. */
  inMemory: string | null
}

const shared = new WeakMap<Platform, Map<string, Shared>>()

function sharedFor(platform: Platform, storageKey: string): Shared {
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

export interface KeyStore {
  /** The one login in flight on this platform and storageKey, whichever instance started it. */
  pending: Promise<string> | null
  /** The kept session key, or null. */
  kept(): string | null
  /** Stores a new key; when storage refuses it, it is kept in memory and `@client/storage-failed` thrown. */
  keep(key: string): void
  /** Forgets the kept key. */
  forget(): void
  /** Forgets `key` unless another instance has kept a newer one since. */
  forgetIfKept(key: string | null): void
}

export function createKeyStore(platform: Platform, storageKey: string): KeyStore {
  const slot = sharedFor(platform, storageKey)

  function kept(): string | null {
    if (slot.inMemory !== null) return slot.inMemory
    let value: unknown
    try {
      value = platform.getStorageSync(storageKey)
    } catch {
      return null
    }
    return typeof value === 'string' && value !== '' ? value : null
  }

  function forget(): void {
    const onlyInMemory = slot.inMemory !== null
    slot.inMemory = null
    try {
      platform.removeStorageSync(storageKey)
    } catch (cause) {
      // A key that only memory held is gone; one that storage may still hold is worth reporting.
      if (!onlyInMemory) throw storageFailed(cause)
    }
  }

  return {
    get pending() {
      return slot.pending
    },
    set pending(login) {
      slot.pending = login
    },
    kept,
    keep(key) {
      try {
        platform.setStorageSync(storageKey, key)
        slot.inMemory = null
      } catch (cause) {
        slot.inMemory = key
        throw storageFailed(cause)
      }
    },
    forget,
    forgetIfKept(key) {
      if (key !== null && kept() === key) forget()
    },
  }
}

function storageFailed(cause: unknown): CampusgateError {
  const detail = cause instanceof Error ? cause.message : (cause as { errMsg?: unknown })?.errMsg
  return new CampusgateError(0, STORAGE_FAILED, typeof detail === 'string' ? detail : undefined)
}
