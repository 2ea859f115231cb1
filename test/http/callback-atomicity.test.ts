import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import {
  attemptStatusesOf,
  decideAtProvider,
  followCallback,
  openLink,
  registerMessenger,
  requestConfirmationLink,
  spendProviderCode,
  startStack,
  type Stack,
} from '../helpers/stack.js'

/**
 * A denied or failed tier-2 callback and its audit event are one change: the attempt's state and
 * the trail agree, and when the event cannot be written the attempt does not move either.
 */
describe('the tier-2 callback writes its outcome and its audit event in one transaction', () => {
  let stack: Stack
  before(async () => {
    stack = await startStack()
  })
  after(() => stack.close())

  const db = () => stack.service.db.kysely

  /** The database itself refuses audit events of `type` (a trigger), as a failing write would. */
  async function refuseAuditEvents(type: string): Promise<void> {
    if (stack.service.db.dialect === 'sqlite') {
      await sql
        .raw(
          `CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_events WHEN NEW.type = '${type}' ` +
            `BEGIN SELECT RAISE(ABORT, 'audit refused'); END`,
        )
        .execute(db())
    } else {
      await sql
        .raw(
          `CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ` +
            `IF NEW.type = '${type}' THEN RAISE EXCEPTION 'audit refused'; END IF; RETURN NEW; END $$`,
        )
        .execute(db())
      await sql
        .raw(
          'CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_events ' +
            'FOR EACH ROW EXECUTE FUNCTION refuse_audit()',
        )
        .execute(db())
    }
  }

  async function acceptAuditEvents(): Promise<void> {
    if (stack.service.db.dialect === 'sqlite') {
      await sql.raw('DROP TRIGGER refuse_audit').execute(db())
    } else {
      await sql.raw('DROP TRIGGER refuse_audit ON audit_events').execute(db())
      await sql.raw('DROP FUNCTION refuse_audit()').execute(db())
    }
  }

  async function eventsOf(openId: string, type: string): Promise<number> {
    const rows = await db()
      .selectFrom('audit_events')
      .innerJoin('identities', 'identities.user_id', 'audit_events.user_id')
      .select('audit_events.id')
      .where('identities.subject', '=', openId)
      .where('audit_events.type', '=', type as never)
      .execute()
    return rows.length
  }

  async function userInBrowser() {
    const user = await registerMessenger(stack)
    const link = await requestConfirmationLink(stack, user.sessionKey, 'student@example.edu')
    const opened = await openLink(link)
    assert.equal(opened.status, 301)
    return { ...user, cookie: opened.cookie }
  }

  it('a denial whose audit event cannot be written leaves the attempt as it was; once it can, both are written', async () => {
    const user = await userInBrowser()
    const callback = await decideAtProvider(stack, user.openId, 'deny')
    await refuseAuditEvents('university-denied')
    try {
      const refused = await followCallback(callback, user.cookie)
      assert.equal(refused.status, 200, 'the callback answers 200 in every case')
      assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['redirected'])
      assert.equal(await eventsOf(user.openId, 'university-denied'), 0)
    } finally {
      await acceptAuditEvents()
    }
    const denied = await followCallback(callback, user.cookie)
    assert.match(denied.text, /declined/)
    assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['denied'])
    assert.equal(await eventsOf(user.openId, 'university-denied'), 1)
  })

  it('a failed token exchange whose audit event cannot be written is not marked failed', async () => {
    const user = await userInBrowser()
    const callback = await decideAtProvider(stack, user.openId, 'allow')
    // Someone else spends the provider's code first: the exchange fails.
    await spendProviderCode(stack, callback)
    await refuseAuditEvents('university-failed')
    try {
      assert.equal((await followCallback(callback, user.cookie)).status, 200)
      // Claimed for the exchange, never marked failed without its event; it expires unfinished.
      assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['exchanging'])
      assert.equal(await eventsOf(user.openId, 'university-failed'), 0)
    } finally {
      await acceptAuditEvents()
    }
  })

  it('a failed token exchange: the attempt is failed and the trail says so, once each', async () => {
    const user = await userInBrowser()
    const callback = await decideAtProvider(stack, user.openId, 'allow')
    await spendProviderCode(stack, callback)
    assert.match((await followCallback(callback, user.cookie)).text, /Linking failed/)
    assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['failed'])
    assert.equal(await eventsOf(user.openId, 'university-failed'), 1)
  })

  let alanLinked = false
  /** A user whose round trip signs in as `alan`, whom another user linked first. */
  async function userFindingAlanTaken() {
    if (!alanLinked) {
      const holder = await userInBrowser()
      const linked = await followCallback(
        await decideAtProvider(stack, holder.openId, 'allow', 'alan'),
        holder.cookie,
      )
      assert.match(linked.text, /University account linked/)
      alanLinked = true
    }
    const user = await userInBrowser()
    return { ...user, callback: await decideAtProvider(stack, user.openId, 'allow', 'alan') }
  }

  it('an identity another user holds: the attempt ends taken and the trail says so, once each', async () => {
    const user = await userFindingAlanTaken()
    assert.match((await followCallback(user.callback, user.cookie)).text, /Already linked/)
    assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['taken'])
    assert.equal(await eventsOf(user.openId, 'university-refused'), 1)
  })

  it('a taken identity whose audit event cannot be written does not end the attempt taken', async () => {
    const user = await userFindingAlanTaken()
    await refuseAuditEvents('university-refused')
    try {
      assert.equal((await followCallback(user.callback, user.cookie)).status, 200)
      // Claimed for the exchange, never marked taken without its event; it expires unfinished.
      assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['exchanging'])
      assert.equal(await eventsOf(user.openId, 'university-refused'), 0)
    } finally {
      await acceptAuditEvents()
    }
  })
})
