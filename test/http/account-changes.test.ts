import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { randomBytes } from 'node:crypto'
import { latestAuditEvents } from '../../src/audit/store.js'
import type { Origin } from '../../src/audit/audit.js'
import { hashSecret, newId } from '../../src/lib/secrets.js'
import {
  logout,
  registerMessenger,
  registerUniversity,
  sessionOf,
  startStack,
  type Stack,
} from '../helpers/stack.js'
import {
  newWebhookSecret,
  startWebhookReceiver,
  type DeliveredEvent,
  type WebhookReceiver,
} from '../helpers/webhook-receiver.js'

const DAY = 86_400_000
const HOUR = 3_600_000

/**
 * Issue 39: every account change is one call of the unit of work (accounts/changes.ts), which
 * writes the change's audit event and its lifecycle events and wakes the webhook worker after the
 * commit. The worker polls once an hour here, so an event that arrives came from that wake.
 */
describe('every account change writes its audit event and its events arrive without a poll', () => {
  let stack: Stack
  let receiver: WebhookReceiver
  const secret = newWebhookSecret()
  const operator: Origin = { actor: 'console:alice', ip: null }

  before(async () => {
    receiver = await startWebhookReceiver(secret)
    stack = await startStack(
      {
        WEBHOOK_URL: receiver.url,
        WEBHOOK_SECRET: secret,
        SESSION_TTL: '40d',
        UNIVERSITY_LINK_MAX_AGE: '10d',
      },
      {
        tweak: (config) => ({ ...config, webhook: { ...config.webhook, pollIntervalMs: HOUR } }),
      },
    )
    // The first round (at start) has run; from now on only a wake delivers.
    await stack.service.webhookWorker!.runOnce()
  })
  after(async () => {
    await stack.close()
    await receiver.close()
  })

  /** Waits (at most 3 s, far below the hour's poll) for the user's events to reach `kinds`. */
  async function arrived(openId: string, kinds: string[]): Promise<DeliveredEvent[]> {
    const of = () => receiver.delivered().filter((event) => event.data.openId === openId)
    const deadline = Date.now() + 3000
    while (of().length < kinds.length && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    const events = of()
    assert.deepEqual(
      events.map((event) =>
        event.data.reason === undefined ? event.type : `${event.type}:${event.data.reason}`,
      ),
      kinds,
    )
    return events
  }

  async function auditOf(openId: string, userId: string): Promise<string[]> {
    const rows = await latestAuditEvents(stack.service.db.kysely, 100, null)
    return rows
      .filter((row) => row.open_id === openId || row.user_id === userId)
      .map((row) => `${row.type} by ${row.actor}`)
  }

  async function userIdOf(openId: string): Promise<string> {
    const events = await arrived(openId, ['user.created', 'session.started'])
    return String(events[0]?.data.userId)
  }

  it('registration, and a second device of the same user', async () => {
    const user = await registerMessenger(stack)
    const userId = await userIdOf(user.openId)
    await registerMessenger(stack, user.openId)
    // Below SESSIONS_PER_USER the first session lives on (docs/sessions.md): nothing ends, and
    // the second registration is one of a returning person, not a rotation.
    await arrived(user.openId, ['user.created', 'session.started', 'session.started'])
    assert.deepEqual(await auditOf(user.openId, userId), [
      'registration by api',
      'registration by api',
    ])
  })

  it('link and logout', async () => {
    const user = await registerUniversity(stack, 'changes-logout@example.edu')
    const userId = await userIdOf(user.openId)
    await arrived(user.openId, ['user.created', 'session.started', 'university.linked'])
    await logout(stack, user.sessionKey)
    await arrived(user.openId, [
      'user.created',
      'session.started',
      'university.linked',
      'session.ended:logout',
      'university.unlinked:logout',
    ])
    const trail = await auditOf(user.openId, userId)
    assert.deepEqual(
      trail.filter((line) => !line.startsWith('registration')),
      ['university-linked by api', 'logout by api'],
    )
  })

  it('revocation, unlink and erasure by an operator, each audited with the operator’s name', async () => {
    const user = await registerUniversity(stack, 'changes-operator@example.edu')
    const userId = await userIdOf(user.openId)
    const { accounts } = stack.service
    assert.equal(await accounts.unlink({ openId: user.openId, origin: operator }), 'unlinked')
    assert.equal(await accounts.unlink({ openId: user.openId, origin: operator }), 'not-linked')
    assert.equal((await sessionOf(stack, user.sessionKey)).body.tier, 'messenger-registered')
    assert.equal(await accounts.revoke({ openId: user.openId, which: 'all', origin: operator }), 1)
    assert.equal(await accounts.erase({ openId: user.openId, origin: operator }), true)
    await arrived(user.openId, [
      'user.created',
      'session.started',
      'university.linked',
      'university.unlinked:revoked',
      'session.ended:revoked',
      'user.erased',
    ])
    assert.deepEqual(await auditOf(user.openId, userId), [
      'registration by api',
      'university-linked by api',
      'university-unlinked by console:alice',
      'logout by console:alice',
      'erasure by console:alice',
    ])
  })

  it('import: the original’s user is announced and audited as the operator’s', async () => {
    const openId = `original-${randomBytes(6).toString('hex')}`
    const now = stack.service.clock.now().getTime()
    const [result] = await stack.service.changes.importOriginal({
      users: [
        {
          openId,
          messengerSessionKey: 'sealed',
          keyHash: hashSecret(randomBytes(32).toString('base64url')),
          lastUsed: now,
          expiresAt: now + DAY,
          userId: newId(),
          identityId: newId(),
          sessionId: newId(),
        },
      ],
      origin: { actor: 'cli:operator', ip: null },
      now,
    })
    assert.equal(result?.outcome, 'import')
    await arrived(openId, ['user.created', 'session.started'])
    assert.deepEqual(await auditOf(openId, result.userId!), ['import by cli:operator'])
  })

  it('lapse (the pruner) and expiry (the key presented too late), by the system', async () => {
    const linked = await registerUniversity(stack, 'changes-lapse@example.edu')
    const linkedId = await userIdOf(linked.openId)
    const tierOne = await registerMessenger(stack)
    const tierOneId = await userIdOf(tierOne.openId)

    stack.service.clock.advance(10 * DAY + 1000)
    await stack.service.pruner.runOnce()
    await arrived(linked.openId, [
      'user.created',
      'session.started',
      'university.linked',
      'university.unlinked:lapsed',
    ])
    assert.deepEqual((await auditOf(linked.openId, linkedId)).slice(2), [
      'university-unlinked by system',
    ])

    stack.service.clock.advance(30 * DAY)
    assert.equal((await sessionOf(stack, tierOne.sessionKey)).status, 401)
    await arrived(tierOne.openId, ['user.created', 'session.started', 'session.ended:expiry'])
    assert.deepEqual(await auditOf(tierOne.openId, tierOneId), [
      'registration by api',
      'expiry by system',
    ])
  })
})
