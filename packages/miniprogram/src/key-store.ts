import { CampusgateError, STORAGE_FAILED } from './error.js'
import type { Platform } from './platform.js'
import type { Session } from './wire.js'

/** Why the kit's session changed: what `onSessionChange` listeners hear. */
export type SessionChangeReason = 'signed-in' | 'renewed' | 'signed-out' | 'erased'

export interface SessionChange {
  reason: SessionChangeReason
  /** The new session (signed in, renewed); null when the key ended, or could not be read. */
  session: Session | null
}

/** A sign-in's outcome: the new key, and its session when it could be read. */
export interface SignedIn {
  key: string
  session: Session | null
}

/**
 * What every kit instance on one platform with one `storageKey` shares: the login in flight, and
 * the key that storage refused. Each page of a mini-program may create its own instance; were the
 * login per instance, two pages renewing at once would each register, and the second registration
 * would end the first's key.
 */
interface Shared {
  pending: Promise<SignedIn> | null
  /** A key the platform's storage refused: used instead of storage until a later one is stored. */
  inMemory: string | null
  /** The key the last renewal issued, and when: refused again soon after, it is not renewed. */
  renewed: { key: string; at: number } | null
  /** The id of the kept key's session, once campusgate named it. */
  sessionId: string | null
  /** Every instance's `onSessionChange` listeners: a change made by one is a change for all. */
  listeners: Set<(change: SessionChange) => void>
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
    slot = { pending: null, inMemory: null, renewed: null, sessionId: null, listeners: new Set() }
    byKey.set(storageKey, slot)
  }
  return slot
}

export interface KeyStore {
  /** The one login in flight on this platform and storageKey, whichever instance started it. */
  pending: Promise<SignedIn> | null
  /** What every instance on this platform and storageKey shares besides the key. */
  readonly shared: Pick<Shared, 'renewed' | 'sessionId' | 'listeners'>
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
    slot.sessionId = null
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
    shared: slot,
    kept,
    keep(key) {
      slot.sessionId = null
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
