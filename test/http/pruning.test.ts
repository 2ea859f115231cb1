import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createPruner } from '../../src/maintenance/pruner.js'
import {
  openLink,
  registerMessenger,
  requestConfirmationLink,
  startStack,
  type Stack,
} from '../helpers/stack.js'

describe('background pruning', () => {
  let stack: Stack
  before(async () => {
    stack = await startStack()
  })
  after(() => stack.close())

  const count = async (table: 'registration_codes' | 'university_attempts' | 'mail_outbox') =>
    Number(
      (
        await stack.service.db.kysely
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    )

  it('runs on one instance per round: a second pruner on the same database waits for the lease', async () => {
    const { db, clock, sessions } = stack.service
    const other = createPruner({
      db: db.kysely,
      clock,
      sessions,
      discardMail: async () => undefined,
      log: stack.service.app.log,
    })
    assert.notEqual(await stack.service.pruner.runOnce(), null)
    assert.equal(await other.runOnce(), null, 'the lease is held by the first instance')
    clock.advance(60_000)
    assert.notEqual(await other.runOnce(), null, 'an expired lease is taken over')
    assert.equal(await stack.service.pruner.runOnce(), null)
  })

  it('deletes expired codes and attempts, and old delivered mail rows', async () => {
    const user = await registerMessenger(stack)
    const link = await requestConfirmationLink(stack, user.sessionKey, 'prune@example.edu')
    await openLink(link)
    assert.ok((await count('registration_codes')) >= 1)
    assert.ok((await count('university_attempts')) >= 1)
    assert.ok((await count('mail_outbox')) >= 1)
    stack.service.clock.advance(8 * 86_400_000)
    const other = createPruner({
      db: stack.service.db.kysely,
      clock: stack.service.clock,
      sessions: stack.service.sessions,
      discardMail: async () => undefined,
      log: stack.service.app.log,
    })
    // Whichever pruner holds the lease now does the round.
    const counts = (await stack.service.pruner.runOnce()) ?? (await other.runOnce())
    assert.ok(counts !== null)
    assert.ok(counts.codesAndAttempts >= 2)
    assert.ok(counts.mails >= 1)
    assert.equal(await count('registration_codes'), 0)
    assert.equal(await count('university_attempts'), 0)
    assert.equal(await count('mail_outbox'), 0)
  })
})
