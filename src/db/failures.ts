// What the drivers' errors mean, in one place: which failures are worth retrying, and which say the
// database cannot be reached. Both drivers are named here and nowhere above db/.

interface DriverError {
  code?: unknown
  message?: unknown
}

function codeOf(error: unknown): string {
  const code = (error as DriverError | null)?.code
  return typeof code === 'string' ? code : ''
}

/**
 * A transaction lost a race and may simply run again: PostgreSQL's serialization failure (40001)
 * or deadlock (40P01). (SQLite has waited out its busy timeout before it says busy: that is an
 * unavailable database, not a race.)
 */
export function isTransientConflict(error: unknown): boolean {
  const code = codeOf(error)
  return code === '40001' || code === '40P01'
}

// Socket errors of a connection that is refused, reset or silent.
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
])

// pg's own messages for a connection that died or never came, which carry no code.
const CONNECTION_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection ended|Query read timeout/i

/**
 * The database cannot take a write: SQLite's disk full, read-only file or database, or I/O error;
 * PostgreSQL's insufficient resources (class 53: disk_full 53100 and its kin) or a read-only
 * transaction (25006, a standby). Such a request is answered 503 like an unreachable database, and
 * the database counts as write-impaired (`db/write-health.ts`) until a write succeeds again.
 */
export function isWriteFault(error: unknown): boolean {
  for (let current = error, depth = 0; current != null && depth < 5; depth += 1) {
    const code = codeOf(current)
    if (/^SQLITE_(FULL|READONLY|IOERR)/.test(code)) return true
    if (code === '53000' || code === '53100' || code === '25006') return true
    current = (current as { cause?: unknown }).cause
  }
  return false
}

/**
 * The database cannot be reached right now: the connection was refused, dropped or timed out, or
 * PostgreSQL is shutting down or starting (57P01-57P03), or any connection exception (class 08);
 * or PostgreSQL lacks the resources (class 53: disk, memory, connections) or is a read-only
 * standby (25006); or the SQLite file stayed locked by another process past the busy timeout, or
 * cannot be read or written (full, read-only, I/O error). Such a request is answered 503 and the process lives on.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let current = error, depth = 0; current != null && depth < 5; depth += 1) {
    const code = codeOf(current)
    if (NETWORK_CODES.has(code) || /^(08|53|57P0[123])/.test(code) || code === '25006') return true
    if (/^SQLITE_(BUSY|IOERR|CANTOPEN|FULL|READONLY)/.test(code)) return true
    const message = (current as DriverError).message
    if (typeof message === 'string' && CONNECTION_MESSAGES.test(message)) return true
    current = (current as { cause?: unknown }).cause
  }
  return false
}
