import { createHash } from 'node:crypto'
import type { Queryable } from '../../db/schema.js'

// docs/university-providers.md, "SAML": the one writer of `saml_assertions`. An assertion is
// accepted once across every instance: its id is kept (hashed with the issuer) until it expires.

export interface AssertionStore {
  /**
   * Records the assertion `id` of `issuer`, kept until `expiresAt` (epoch ms). False when it was
   * already recorded and has not expired: a replay.
   */
  firstUse(issuer: string, id: string, expiresAt: number, now: number): Promise<boolean>
}

function idHash(issuer: string, id: string): string {
  return createHash('sha256').update(`${issuer}\n${id}`, 'utf8').digest('hex')
}

export function createAssertionStore(db: Queryable): AssertionStore {
  return {
    async firstUse(issuer, id, expiresAt, now) {
      // Expired ids go first: they can never be accepted again anyway, and the table stays small.
      await db.deleteFrom('saml_assertions').where('expires_at', '<=', now).execute()
      const inserted = await db
        .insertInto('saml_assertions')
        .values({ id_hash: idHash(issuer, id), expires_at: expiresAt })
        .onConflict((conflict) => conflict.column('id_hash').doNothing())
        .returning('id_hash')
        .executeTakeFirst()
      return inserted !== undefined
    },
  }
}
