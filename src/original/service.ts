import type { Kysely } from 'kysely'
import type { SessionStore } from '../sessions/store.js'
import type { AccountChanges } from '../accounts/changes.js'
import {
  planOriginalImport,
  type ImportDecision,
  type OriginalUser,
} from '../accounts/import-plan.js'
import type { Origin } from '../audit/audit.js'
import type { Clock } from '../clock.js'
import { isDatabaseUnavailable } from '../db/failures.js'
import type { Database } from '../db/schema.js'
import { describeError } from '../lib/describe-error.js'
import type { Cipher } from '../lib/encryption.js'
import { hashSecret, newId } from '../lib/secrets.js'
import { classifyRow, type LiveRow } from './rows.js'
import type { OriginalSource } from './source.js'

/** What an import did (or, with `dryRun`, would do), row by row of the original's table. */
export interface ImportReport {
  dryRun: boolean
  /** Rows read from the original's table. */
  rows: number
  /** Users created, each with its live session. */
  imported: number
  /** Users an earlier import brought over whose key the original has since renewed or extended. */
  updated: number
  skippedExpired: number
  /** Rows the original had logged out (its logout empties the messenger session key). */
  skippedLoggedOut: number
  /** Users campusgate already holds with the same key or something newer: left as they are. */
  skippedPresent: number
  invalid: number
  /** The first invalid rows, named by openId or position; never a key. */
  invalidRows: { name: string; reason: string }[]
  /** Live rows with a UclapiToken: imported at tier 1 (no identity was ever proved). */
  tokensNotCarried: number
  /** Rows whose LastUsed lay ahead of this clock (counted as now): a wrong --timezone? */
  lastUsedAhead: number
}

export interface ImportProgress {
  done: number
  total: number
}

export interface ImportOptions {
  dryRun: boolean
  /** Who runs the import, for the audit trail (the operator's CLI). */
  origin: Origin
  /** Rows read and written per transaction. */
  batchSize?: number
  onProgress?: (progress: ImportProgress) => void
}

export interface OriginalImport {
  run(source: OriginalSource, options: ImportOptions): Promise<ImportReport>
}

/** How many invalid rows the report names; the count covers them all. */
const NAMED_INVALID = 100

export function createOriginalImport(deps: {
  db: Kysely<Database>
  clock: Clock
  /** Encrypts the messenger session key, like every other. */
  cipher: Cipher
  ttlMs: number
  /** Stores each batch, with its audit and lifecycle events (an imported user is announced as a registered one). */
  changes: AccountChanges
  /** Where a dry run reads the sessions the import would compare its keys with. */
  sessions: SessionStore
}): OriginalImport {
  const { db, clock, cipher, ttlMs, changes, sessions } = deps

  function toUser(row: LiveRow): OriginalUser {
    return {
      openId: row.openId,
      messengerSessionKey: cipher.encrypt(row.messengerSessionKey),
      keyHash: hashSecret(row.sessionKey),
      lastUsed: row.lastUsed,
      expiresAt: row.expiresAt,
      userId: newId(),
      identityId: newId(),
      sessionId: newId(),
    }
  }

  /** One transaction: every user of `users` is stored whole, or not at all. */
  async function store(users: readonly OriginalUser[], now: number, origin: Origin) {
    const results = await changes.importOriginal({ users, origin, now })
    return results.map((result) => result.outcome)
  }

  return {
    async run(source, options) {
      const batchSize = options.batchSize ?? 1000
      const report: ImportReport = {
        dryRun: options.dryRun,
        rows: 0,
        imported: 0,
        updated: 0,
        skippedExpired: 0,
        skippedLoggedOut: 0,
        skippedPresent: 0,
        invalid: 0,
        invalidRows: [],
        tokensNotCarried: 0,
        lastUsedAhead: 0,
      }
      const invalid = (name: string, reason: string) => {
        report.invalid += 1
        if (report.invalidRows.length < NAMED_INVALID) report.invalidRows.push({ name, reason })
      }
      const count = (outcome: ImportDecision) => {
        if (outcome === 'import') report.imported += 1
        else if (outcome === 'present') report.skippedPresent += 1
        else report.updated += 1
      }
      // A dry run writes nothing, so it remembers whom it would have created.
      const imagined = new Set<string>()

      async function flush(users: OriginalUser[], now: number): Promise<void> {
        if (users.length === 0) return
        if (options.dryRun) {
          for (const plan of await planOriginalImport(db, sessions, users, now)) {
            const decision =
              plan.decision === 'import' && imagined.has(plan.user.openId)
                ? 'present'
                : plan.decision
            if (decision === 'import') imagined.add(plan.user.openId)
            count(decision)
          }
          return
        }
        try {
          for (const outcome of await store(users, now, options.origin)) count(outcome)
        } catch (error) {
          if (isDatabaseUnavailable(error)) throw error
          // One user the database refuses (a key another row also holds) must not hold back the
          // rest of its batch: each is tried alone, and the one refused is named.
          for (const user of users) {
            try {
              for (const outcome of await store([user], now, options.origin)) count(outcome)
            } catch (alone) {
              if (isDatabaseUnavailable(alone)) throw alone
              invalid(`openId ${JSON.stringify(user.openId)}`, `not stored: ${refusal(alone)}`)
            }
          }
        }
      }

      const total = await source.count()
      for await (const page of source.pages(batchSize)) {
        const now = clock.now().getTime()
        let batch: OriginalUser[] = []
        let inBatch = new Set<string>()
        for (const row of page) {
          report.rows += 1
          const verdict = classifyRow(row, report.rows, now, ttlMs)
          if (verdict.kind === 'invalid') invalid(verdict.name, verdict.reason)
          else if (verdict.kind === 'expired') report.skippedExpired += 1
          else if (verdict.kind === 'logged-out') report.skippedLoggedOut += 1
          else {
            if (row.lastUsed !== null && row.lastUsed > now) report.lastUsedAhead += 1
            if (row.uclapiToken.trim() !== '') report.tokensNotCarried += 1
            // Two rows of one openId (padded and not): the second is weighed against the first.
            if (inBatch.has(verdict.openId)) {
              await flush(batch, now)
              batch = []
              inBatch = new Set()
            }
            batch.push(toUser(verdict))
            inBatch.add(verdict.openId)
          }
        }
        await flush(batch, now)
        options.onProgress?.({ done: report.rows, total: Math.max(total, report.rows) })
      }
      return report
    },
  }
}

/** Why the database refused a row, without its values: the driver's code and first line. */
function refusal(error: unknown): string {
  const code = (error as { code?: unknown }).code
  const text = describeError(error, 120).split('\n')[0] ?? ''
  return typeof code === 'string' ? `${code}: ${text}` : text
}
