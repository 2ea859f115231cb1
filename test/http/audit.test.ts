import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { latestAuditEvents } from '../../src/audit/store.js'
import type { AuditEventRow } from '../../src/db/schema.js'
import { call } from '../helpers/service.js'
import {
  decideAtProvider,
  followCallback,
  logout,
  openLink,
  registerMessenger,
  requestConfirmationLink,
  startStack,
  type Stack,
} from '../helpers/stack.js'

const MINUTE = 60_000

function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `))
  return line === undefined ? 0 : Number(line.slice(series.length + 1))
}

describe('the audit trail', () => {
  let stack: Stack
  const secrets: string[] = []

  before(async () => {
    stack = await startStack({
      SESSION_TTL: '10m',
      SESSION_TOUCH_INTERVAL: '1m',
      AUDIT_RETENTION: '1d',
    })
  })
  after(() => stack.close())

  async function eventsOf(openId: string): Promise<AuditEventRow[]> {
    return latestAuditEvents(stack.service.db.kysely, 100, openId)
  }

  it('records registration, rotation, link, denial, refusal, logout, expiry and erasure, by whom and from where', async () => {
    // Registration, then a second registration of the same user (a second device).
    const first = await registerMessenger(stack)
    const again = await registerMessenger(stack, first.openId)
    secrets.push(first.sessionKey, again.sessionKey)

    // Tier 2: one denied round trip, one refused callback (no cookie), one linked.
    const deniedLink = await requestConfirmationLink(stack, again.sessionKey, 'a@example.edu')
    const deniedOpen = await openLink(deniedLink)
    await followCallback(await decideAtProvider(stack, first.openId, 'deny'), deniedOpen.cookie)
    const link = await requestConfirmationLink(stack, again.sessionKey, 'a@example.edu')
    const opened = await openLink(link)
    const callback = await decideAtProvider(stack, first.openId, 'allow')
    await followCallback(callback, null)
    await followCallback(callback, opened.cookie)
    secrets.push(deniedLink, link, opened.cookie, deniedOpen.cookie)
    for (const url of [deniedLink, link])
      secrets.push(new URL(url).searchParams.get('universityRegistrationCode')!)
    secrets.push(new URL(callback).searchParams.get('code') ?? 'no-code')

    // Logout, on both devices.
    await logout(stack, again.sessionKey)
    await logout(stack, first.sessionKey)

    const events = await eventsOf(first.openId)
    assert.deepEqual(
      events.map((e) => e.type),
      [
        'registration',
        'registration',
        'university-denied',
        'university-refused',
        'university-linked',
        'logout',
        'logout',
      ],
    )
    for (const event of events) {
      assert.equal(event.actor, 'api')
      assert.equal(event.ip, '127.0.0.1')
    }
    const refused = events.find((e) => e.type === 'university-refused')!
    assert.deepEqual(JSON.parse(refused.detail!), {
      reason: 'no attempt cookie',
    })

    // Expiry: the key is presented after its TTL.
    const late = await registerMessenger(stack)
    stack.service.clock.advance(11 * MINUTE)
    assert.equal(
      (await call(`${stack.service.url}/session`, { headers: { authorization: late.sessionKey } }))
        .status,
      401,
    )
    const expiry = (await eventsOf(late.openId)).at(-1)!
    assert.equal(expiry.type, 'expiry')
    assert.equal(expiry.actor, 'system')
    assert.equal(expiry.ip, null)

    // Erasure: the trail keeps who was erased, and nothing else of the user.
    const gone = await registerMessenger(stack)
    secrets.push(late.sessionKey, gone.sessionKey)
    assert.equal(
      (
        await call(`${stack.service.url}/user`, {
          method: 'DELETE',
          headers: { authorization: gone.sessionKey },
        })
      ).status,
      200,
    )
    const erased = (await eventsOf(gone.openId)).map((e) => e.type)
    assert.deepEqual(erased, ['registration', 'erasure'])
  })

  it('holds no secret in any column', async () => {
    const all = JSON.stringify(await latestAuditEvents(stack.service.db.kysely, 1000, null))
    for (const secret of secrets) assert.ok(!all.includes(secret), 'a secret is in audit_events')
  })

  it('records the settings that weaken a guarantee when the service starts (the sandbox here)', async () => {
    const { startService } = await import('../helpers/service.js')
    const sandboxed = await startService()
    try {
      const events = await latestAuditEvents(sandboxed.db.kysely, 10, null)
      const settings = events
        .filter((e) => e.type === 'security-configuration')
        .map((e) => (JSON.parse(e.detail!) as { setting: string }).setting)
      assert.deepEqual(settings, ['sandbox'])
    } finally {
      await sandboxed.close()
    }
  })

  it('counts every event and the domain counters in /metrics', async () => {
    const text = await (await fetch(`${stack.service.url}/metrics`)).text()
    assert.ok(sample(text, 'campusgate_registrations_total{kind="new"}') >= 3, 'new')
    // The second device is a returning person's registration; no session was past the cap.
    assert.equal(sample(text, 'campusgate_registrations_total{kind="returning"}'), 1)
    assert.equal(sample(text, 'campusgate_sessions_rotated_total'), 0)
    assert.equal(sample(text, 'campusgate_university_links_total{outcome="linked"}'), 1)
    assert.equal(sample(text, 'campusgate_university_links_total{outcome="denied"}'), 1)
    assert.equal(sample(text, 'campusgate_refusals_total{reason="no attempt cookie"}'), 1)
    assert.equal(sample(text, 'campusgate_logouts_total'), 2)
    assert.equal(sample(text, 'campusgate_session_expiries_total'), 1)
    assert.equal(sample(text, 'campusgate_erasures_total'), 1)
    assert.equal(sample(text, 'campusgate_audit_events_total{type="logout"}'), 2)
    assert.ok(
      sample(text, 'campusgate_mail_sent_total') >= 2,
      text.match(/^campusgate_mail.*$/gm)?.join('\n'),
    )
  })

  it('forgets events older than AUDIT_RETENTION when pruning', async () => {
    const before = (await latestAuditEvents(stack.service.db.kysely, 1000, null)).length
    assert.ok(before > 0)
    stack.service.clock.advance(25 * 60 * MINUTE)
    const counts = await stack.service.pruner.runOnce()
    assert.equal(counts?.auditEvents, before)
    assert.deepEqual(await latestAuditEvents(stack.service.db.kysely, 1000, null), [])
  })
})
