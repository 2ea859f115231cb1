import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { claimDue, settleClaim, type RowCondition } from '../../src/lib/outbox.js'
import { enqueueMail } from '../../src/mail/outbox.js'
import type { Queryable } from '../../src/db/schema.js'
import { sqliteFile, type SqliteFile } from '../helpers/database.js'

// The outbox machinery (lib/outbox.ts) over a real mail_outbox: the settle is fenced by the claim,
// and what it writes is checked against the table by the compiler.

const queued: RowCondition = (eb, col) =>
  eb.and([eb(col('sent_at'), 'is', null), eb(col('abandoned_at'), 'is', null)])

describe('the outbox machinery', () => {
  let file: SqliteFile
  let db: Queryable
  before(async () => {
    file = await sqliteFile()
    db = file.db.kysely
  })
  after(() => file.close())

  const claim = (now: number) =>
    claimDue(db, { table: 'mail_outbox', unfinished: queued, now, lockMs: 1000, skipLocked: false })

  it("settles a claimed row only while it is still that claim's, and releases it", async () => {
    const mail = { to: 'a@example.edu', subject: 's', text: 't', html: 'h' }
    const id = await enqueueMail(db, mail, { now: 0, expiresAt: 60_000 })
    const first = await claim(0)
    assert.equal(first?.id, id)
    // The first claim outlived its lock; another worker claims the row again.
    const second = await claim(2000)
    assert.equal(second?.attempts, 2)

    assert.equal(await settleClaim(db, 'mail_outbox', first, { sent_at: 1 }), false)
    assert.equal(await settleClaim(db, 'mail_outbox', second, { sent_at: 2500 }), true)
    const row = await db
      .selectFrom('mail_outbox')
      .select(['sent_at', 'locked_until'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow()
    assert.deepEqual(row, { sent_at: 2500, locked_until: null })
  })

  it('takes only columns of the outbox table it names (checked by npm run check, never run)', () => {
    const claimed = { id: 'x', attempts: 1 }
    const never = () => [
      // @ts-expect-error a misspelled column
      settleClaim(db, 'mail_outbox', claimed, { sent_att: 1 }),
      // @ts-expect-error a column of the other outbox
      settleClaim(db, 'mail_outbox', claimed, { state: 'dead' }),
      // @ts-expect-error a value of the wrong type
      settleClaim(db, 'webhook_deliveries', claimed, { state: 'sent' }),
      // @ts-expect-error the claim's release is the machinery's
      settleClaim(db, 'webhook_deliveries', claimed, { locked_until: 5 }),
      // @ts-expect-error a table that is no outbox
      settleClaim(db, 'users', claimed, { updated_at: 1 }),
    ]
    assert.equal(typeof never, 'function')
  })
})
