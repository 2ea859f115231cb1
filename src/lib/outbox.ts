import type {
  Expression,
  ExpressionBuilder,
  Kysely,
  Selectable,
  SqlBool,
  Transaction,
  Updateable,
} from 'kysely'

/*
 * The machinery both outboxes share (mail_outbox, webhook_deliveries): claim a due row for a
 * while, counting the attempt; settle it only while it is still that attempt's; back off with
 * jitter. Each outbox keeps its own table, its own notion of "due" and of "finished", and calls
 * these with its own rules.
 */

/** The columns the machinery uses; an outbox table has them and its own. */
export interface OutboxColumns {
  id: string
  attempts: number
  next_attempt_at: number
  locked_until: number | null
}

/** The tables of `DB` that have the machinery's columns: its outboxes. */
export type OutboxTable<DB> = {
  [T in keyof DB & string]: DB[T] extends OutboxColumns ? T : never
}[keyof DB & string]

type OutboxRow = OutboxColumns & Record<string, unknown>
/** Any outbox table, seen as `outbox` (the claimed row) and `row` (the candidate). */
interface Outboxes {
  outbox: OutboxRow
  row: OutboxRow
}
type OutboxDb = Kysely<Outboxes> | Transaction<Outboxes>

/** Where an outbox table lives: the store's own connection or transaction, whatever its schema. */
export type OutboxQueryable<DB> = Kysely<DB> | Transaction<DB>

/**
 * A rule of the table's own outbox (not finished; per-user order), over its columns as `col`
 * names them: on the candidate inside the claim's sub-select, on the claimed row in its UPDATE.
 */
export type RowCondition = (
  eb: ExpressionBuilder<Outboxes, 'outbox' | 'row'>,
  col: (column: string) => `outbox.${string}` | `row.${string}`,
) => Expression<SqlBool>

/** A claimed row as the settle functions fence it: its id and the attempt that claimed it. */
export interface Claim {
  id: string
  attempts: number
}

/**
 * Claims one due row of `table` for `lockMs`, counting the attempt; null when none is due. Due:
 * `unfinished` (the outbox's own rule), its time come, not held by a live claim, and `alsoDue`
 * (a rule only the choice needs, such as per-user order). The conditions are repeated on the
 * UPDATE so that of several workers (instances) racing for a row exactly one gets it; where the
 * database has it (`skipLocked`: PostgreSQL) the sub-select also skips rows another worker is
 * claiming.
 */
export async function claimDue<DB, T extends OutboxTable<DB>>(
  db: OutboxQueryable<DB>,
  options: {
    table: T
    unfinished: RowCondition
    alsoDue?: RowCondition
    now: number
    lockMs: number
    skipLocked: boolean
  },
): Promise<Selectable<DB[T]> | null> {
  const { table, unfinished, alsoDue, now, lockMs } = options
  const candidate = (column: string) => `row.${column}` as const
  const claimed = (column: string) => `outbox.${column}` as const
  const row = await (db as unknown as OutboxDb)
    .updateTable(`${table} as outbox` as 'outbox')
    .set((eb) => ({ locked_until: now + lockMs, attempts: eb('outbox.attempts', '+', 1) }))
    .where('outbox.id', '=', (eb) => {
      const due = eb
        .selectFrom(`${table} as row` as 'row')
        .select('row.id')
        .where((w) => unfinished(w, candidate))
        .where((w) => (alsoDue === undefined ? w.lit(true) : alsoDue(w, candidate)))
        .where('row.next_attempt_at', '<=', now)
        .where((w) => w.or([w('row.locked_until', 'is', null), w('row.locked_until', '<=', now)]))
        .orderBy('row.next_attempt_at')
        .limit(1)
      return options.skipLocked ? due.forUpdate().skipLocked() : due
    })
    .where((eb) => unfinished(eb, claimed))
    .where((eb) =>
      eb.or([eb('outbox.locked_until', 'is', null), eb('outbox.locked_until', '<=', now)]),
    )
    .returningAll()
    .executeTakeFirst()
  return (row as Selectable<DB[T]> | undefined) ?? null
}

/**
 * Writes a claimed row's outcome (`set`, columns of `table`: a misspelled one does not compile;
 * the claim is released) only if the row is still that claim's: `attempts` is the fence. A
 * delivery that outlived its lock, while another worker claimed the row again, changes nothing.
 * Whether the outcome was written.
 */
export async function settleClaim<DB, T extends OutboxTable<DB>>(
  db: OutboxQueryable<DB>,
  table: T,
  claim: Claim,
  set: Omit<Updateable<DB[T]>, 'locked_until'>,
): Promise<boolean> {
  const result = await (db as unknown as OutboxDb)
    .updateTable(`${table} as outbox` as 'outbox')
    .set({ ...set, locked_until: null })
    .where('outbox.id', '=', claim.id)
    .where('outbox.attempts', '=', claim.attempts)
    .executeTakeFirst()
  return result.numUpdatedRows > 0n
}

/** The backoff of retried attempts: the first after about `firstMs`, each next `factor` times later, capped. */
export interface Backoff {
  firstMs: number
  maxMs: number
  factor: number
  /** The share of the delay drawn at random either way: 0.25 is ±25 %; 0, exactly the delay. */
  jitter: number
}

/**
 * The delay before the next attempt after `attempts` failed ones: exponential from `firstMs`,
 * capped at `maxMs`, with `jitter` so that what failed together (the receivers of one webhook
 * outage) is not retried in lockstep. The one formula of the mail and webhook workers and of a
 * periodic job's pause after failed rounds.
 */
export function retryDelayMs(
  attempts: number,
  backoff: Backoff,
  random: () => number = Math.random,
): number {
  const base = Math.min(
    backoff.maxMs,
    backoff.firstMs * backoff.factor ** Math.max(0, attempts - 1),
  )
  return Math.round(base * (1 - backoff.jitter + 2 * backoff.jitter * random()))
}
