import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { isDatabaseUnavailable, isWriteFault } from '../../src/db/failures.js'

function driverError(code: string, message = 'driver error'): Error {
  return Object.assign(new Error(message), { code })
}

describe('what a driver error means (issue 28)', () => {
  for (const code of [
    'SQLITE_FULL',
    'SQLITE_READONLY',
    'SQLITE_READONLY_DBMOVED',
    'SQLITE_IOERR_WRITE',
    'SQLITE_IOERR_FSYNC',
    '53100',
    '53000',
    '25006',
  ]) {
    it(`${code} is a write fault, answered 503 like a lost database`, () => {
      assert.equal(isWriteFault(driverError(code)), true)
      assert.equal(isDatabaseUnavailable(driverError(code)), true)
      // Also when wrapped by a caller.
      assert.equal(isWriteFault(new Error('wrapped', { cause: driverError(code) })), true)
    })
  }

  for (const code of ['53200', '53300']) {
    it(`${code} (out of memory, too many connections) is unavailable but no write fault`, () => {
      assert.equal(isDatabaseUnavailable(driverError(code)), true)
      assert.equal(isWriteFault(driverError(code)), false)
    })
  }

  for (const code of ['SQLITE_CONSTRAINT_UNIQUE', '23505', '42P01', '']) {
    it(`${code || 'no code'} is neither`, () => {
      assert.equal(isWriteFault(driverError(code)), false)
      assert.equal(isDatabaseUnavailable(driverError(code)), false)
    })
  }
})
