import type { CompiledQuery, DatabaseConnection, Dialect, Driver, QueryResult } from 'kysely'
import { isWriteFault } from './failures.js'

/**
 * Whether the database takes writes, as the last writes showed. A full disk, a file system turned
 * read-only or a PostgreSQL tablespace out of space leaves reads working, so a read cannot tell:
 * the writes that failed and succeeded tell, and readiness asks here (docs/operations.md, "Storage faults").
 */
export interface WriteHealth {
  /** The last write fault since the last probe write went through, or null while writes work. */
  readonly fault: { error: unknown; at: number } | null
  /** When the last write fault happened (epoch ms, the process's own clock), or null. */
  readonly lastFaultAt: number | null
}

export interface WriteWatch extends WriteHealth {
  noteFault(error: unknown): void
  /** A probe write went through: the database takes writes again. */
  noteWrite(): void
}

export function createWriteWatch(now: () => number = Date.now): WriteWatch {
  let fault: { error: unknown; at: number } | null = null
  let lastFaultAt: number | null = null
  return {
    get fault() {
      return fault
    },
    get lastFaultAt() {
      return lastFaultAt
    },
    noteFault(error) {
      lastFaultAt = now()
      fault = { error, at: lastFaultAt }
    },
    noteWrite() {
      fault = null
    },
  }
}

/**
 * `dialect` with every query watched: a write fault is noted. (Only a probe write clears it: a
 * statement that changed nothing, or a transaction that wrote nothing, goes through on a
 * read-only file system.) `inTransaction` (SQLite's own flag) skips the rollback Kysely sends after a failed
 * statement when SQLite has already rolled the transaction back itself, as it does on a full disk
 * or an I/O error: that rollback would fail with "cannot rollback - no transaction is active"
 * and its error would replace the driver's own.
 */
export function watchingWrites(
  dialect: Dialect,
  watch: WriteWatch,
  inTransaction?: () => boolean,
): Dialect {
  return {
    createAdapter: () => dialect.createAdapter(),
    createIntrospector: (db) => dialect.createIntrospector(db),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createDriver: () => watchingDriver(dialect.createDriver(), watch, inTransaction),
  }
}

function watchingDriver(
  driver: Driver,
  watch: WriteWatch,
  inTransaction: (() => boolean) | undefined,
): Driver {
  const watched = new WeakSet<DatabaseConnection>()
  function watchConnection(connection: DatabaseConnection): DatabaseConnection {
    if (watched.has(connection)) return connection
    watched.add(connection)
    const execute = connection.executeQuery.bind(connection)
    connection.executeQuery = async <R>(query: CompiledQuery): Promise<QueryResult<R>> => {
      try {
        return await execute<R>(query)
      } catch (error) {
        if (isWriteFault(error)) watch.noteFault(error)
        throw error
      }
    }
    return connection
  }
  // Methods are called on the driver itself: Kysely's drivers keep private fields.
  return new Proxy(driver, {
    get(target, property) {
      if (property === 'acquireConnection') {
        return async () => watchConnection(await target.acquireConnection())
      }
      if (property === 'rollbackTransaction' && inTransaction !== undefined) {
        return async (connection: DatabaseConnection) => {
          if (inTransaction()) await target.rollbackTransaction(connection)
        }
      }
      const value: unknown = Reflect.get(target, property, target)
      return typeof value === 'function'
        ? (value as (...a: unknown[]) => unknown).bind(target)
        : value
    },
  })
}

/**
 * How long after a write fault readiness stays off even if some write went through meanwhile:
 * on a nearly full disk small writes may fit while registrations do not, and a load balancer
 * should not flap the instance in and out.
 */
export const WRITE_FAULT_HOLD_MS = 5000

/**
 * Resolves when the database takes writes as far as campusgate knows: no write fault in the last
 * WRITE_FAULT_HOLD_MS, and none since the last probe, or else a probe write goes through now. Rejects with the driver's own error otherwise.
 */
export async function checkWrites(
  writes: WriteWatch,
  probe: () => Promise<void>,
  now: number = Date.now(),
): Promise<void> {
  const { fault, lastFaultAt } = writes
  if (lastFaultAt !== null && now - lastFaultAt < WRITE_FAULT_HOLD_MS) {
    const cause = fault?.error ?? new Error('a write failed moments ago')
    throw new Error(`the database cannot take writes: ${messageOf(cause)}`, { cause })
  }
  if (fault === null) return
  try {
    await probe()
    writes.noteWrite()
  } catch (error) {
    throw new Error(`the database cannot take writes: ${messageOf(error)}`, { cause: error })
  }
}

function messageOf(error: unknown): string {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown }
  const text = typeof message === 'string' ? message : String(error)
  return typeof code === 'string' && code !== '' ? `${code}: ${text}` : text
}
