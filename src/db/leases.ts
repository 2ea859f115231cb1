import type { Kysely } from 'kysely'
import type { Database } from './schema.js'

/**
 * Takes (or renews) the named lease for `holder` until `now + ttlMs`, unless another holder's
 * lease is still running. One atomic upsert, so of several instances asking at once exactly one
 * gets it, on SQLite and PostgreSQL alike.
 */
export async function tryAcquireLease(
  db: Kysely<Database>,
  lease: { name: string; holder: string; ttlMs: number },
  now: number,
): Promise<boolean> {
  const row = await db
    .insertInto('job_leases')
    .values({ name: lease.name, holder: lease.holder, expires_at: now + lease.ttlMs })
    .onConflict((oc) =>
      oc
        .column('name')
        .doUpdateSet((eb) => ({
          holder: eb.ref('excluded.holder'),
          expires_at: eb.ref('excluded.expires_at'),
        }))
        .where((eb) =>
          eb.or([
            eb('job_leases.expires_at', '<=', now),
            eb('job_leases.holder', '=', lease.holder),
          ]),
        ),
    )
    .returning('holder')
    .executeTakeFirst()
  return row?.holder === lease.holder
}

/**
 * A write that proves the database takes writes again after a write fault (a full disk, a
 * read-only file system): the `write-probe` row, rewritten by whichever instance asks.
 */
export async function writeProbe(db: Kysely<Database>, holder: string, now: number): Promise<void> {
  await db
    .insertInto('job_leases')
    .values({ name: 'write-probe', holder, expires_at: now })
    .onConflict((oc) =>
      oc.column('name').doUpdateSet((eb) => ({
        holder: eb.ref('excluded.holder'),
        expires_at: eb.ref('excluded.expires_at'),
      })),
    )
    .execute()
}
