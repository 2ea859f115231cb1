import DataLoader from 'dataloader'

/**
 * The one per-turn batcher: the calls made within one turn of the event loop are handed to
 * `handle` together when the turn ends (`setImmediate`), never later, at most `max` at a time (more
 * make another batch). `handle` answers each call in order, an `Error` rejecting that call alone;
 * a rejected `handle` rejects them all. Nothing is kept between turns (DataLoader's cache is off).
 *
 * It serves every place where work arriving together is cheaper done together: SQLite's grouped
 * commits (grouped-commits.ts), SQLite's touches (sessions/store-sqlite.ts) and PostgreSQL's key
 * checks while every connection of the pool is busy (sessions/store-postgres.ts).
 */
export function perTurn<In, Out>(
  handle: (batch: readonly In[]) => Promise<readonly (Out | Error)[]>,
  max: number,
): (input: In) => Promise<Out> {
  const loader = new DataLoader<In, Out>(handle, {
    cache: false,
    maxBatchSize: max,
    batchScheduleFn: (run) => setImmediate(run),
  })
  return (input) => loader.load(input)
}

/** `error` as an `Error`, so that `perTurn` rejects one call with it. */
export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error))
}
