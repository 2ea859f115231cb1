import assert from 'node:assert/strict'
import { after, before, beforeEach, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import {
  abortable,
  ABORTED,
  CampusgateError,
  createCampusgate,
  MIN_POLL_INTERVAL_MS,
  TIMED_OUT,
  type Campusgate,
} from 'campusgate-miniprogram'
import { SANDBOX_APP } from '../../../src/sandbox/routes.js'
import { freePort, startService, type RunningService } from '../../../test/helpers/service.js'
import { startSmtpSink, type SmtpSink } from '../../../test/helpers/smtp-sink.js'
import { confirmByEmail } from './university.js'
import { createWx, type TestWx } from './platforms.js'

// Timers of a few milliseconds may fire that much early or late on a loaded machine.
const SLACK_MS = 50

describe('waitForTier against the running campusgate', () => {
  let service: RunningService
  let smtp: SmtpSink
  let users = 0
  let wx: TestWx
  let openId: string
  let campusgate: Campusgate

  before(async () => {
    smtp = await startSmtpSink()
    service = await startService({ SMTP_URL: smtp.url })
  })
  after(async () => {
    await service.close()
    await smtp.stop()
  })

  beforeEach(async () => {
    users += 1
    openId = `wait-user-${process.pid}-${users}`
    wx = createWx(`${service.url}/_sandbox/messenger`, openId)
    campusgate = createCampusgate({
      baseUrl: service.url,
      appId: SANDBOX_APP.appId,
      platform: wx,
    })
    await campusgate.login()
    wx.sent.length = 0
  })

  /** When each GET /session was sent. */
  const polls = (): number[] =>
    wx.sent.filter((sent) => sent.url.endsWith('/session')).map((sent) => sent.at)

  function assertSpaced(times: number[], ms: number): void {
    for (let i = 1; i < times.length; i += 1) {
      assert.ok(
        times[i] - times[i - 1] >= ms - SLACK_MS,
        `polls ${times[i] - times[i - 1]} ms apart`,
      )
    }
  }

  async function rejection(promise: Promise<unknown>): Promise<CampusgateError> {
    const error = await promise.then(
      () => assert.fail('expected a rejection'),
      (reason: unknown) => reason,
    )
    assert.ok(error instanceof CampusgateError, String(error))
    return error
  }

  it('resolves with the session once the user has confirmed the emailed link', async () => {
    const email = `${openId}@example.edu`
    await campusgate.registerUniversity(email)
    const waiting = campusgate.waitForTier('university-registered', { timeoutMs: 20_000 })
    await confirmByEmail(service, smtp, openId, email)
    const session = await waiting
    assert.equal(session.tier, 'university-registered')
    assert.equal(session.openId, openId)
    assert.ok(polls().length >= 2, 'the first poll saw tier 1')
    assertSpaced(polls(), MIN_POLL_INTERVAL_MS)
  })

  it('resolves after one poll when the session already has the tier', async () => {
    const session = await campusgate.waitForTier('messenger-registered', { timeoutMs: 5_000 })
    assert.equal(session.tier, 'messenger-registered')
    assert.equal(polls().length, 1)
  })

  it('polls at most every 2 s, a smaller intervalMs included, and times out at timeoutMs', async () => {
    const started = Date.now()
    const error = await rejection(
      campusgate.waitForTier('university-registered', { timeoutMs: 4_500, intervalMs: 100 }),
    )
    const took = Date.now() - started
    assert.equal(error.status, 0)
    assert.equal(error.code, TIMED_OUT)
    assert.ok(took >= 4_500 - SLACK_MS && took < 6_000, `timed out after ${took} ms`)
    // At 0, 2 and 4 s.
    assert.equal(polls().length, 3)
    assertSpaced(polls(), MIN_POLL_INTERVAL_MS)
    await sleep(MIN_POLL_INTERVAL_MS + 200)
    assert.equal(polls().length, 3, 'nothing is sent after the wait ended')
  })

  it('keeps polling through polls that got no answer, until the timeout', async () => {
    const offline = createCampusgate({
      baseUrl: `http://127.0.0.1:${await freePort()}`,
      appId: SANDBOX_APP.appId,
      platform: wx,
    })
    const error = await rejection(
      offline.waitForTier('university-registered', { timeoutMs: 2_500 }),
    )
    assert.equal(error.code, TIMED_OUT, 'no answer is worth another try, not the end')
    assert.equal(polls().length, 2)
  })

  it('stops at once when the signal aborts, and sends nothing after', async () => {
    const controller = new AbortController()
    const waiting = campusgate.waitForTier('university-registered', {
      timeoutMs: 20_000,
      signal: controller.signal,
    })
    await sleep(300)
    const aborted = Date.now()
    controller.abort()
    const error = await rejection(waiting)
    assert.ok(Date.now() - aborted < 100)
    assert.equal(error.status, 0)
    assert.equal(error.code, ABORTED)
    assert.equal(polls().length, 1)
    await sleep(MIN_POLL_INTERVAL_MS + 200)
    assert.equal(polls().length, 1, 'nothing is sent after the abort')

    // The kit's own signal, for base libraries without AbortController, does the same.
    const wait = abortable()
    const hidden = campusgate.waitForTier('university-registered', {
      timeoutMs: 20_000,
      signal: wait.signal,
    })
    await sleep(100)
    wait.abort()
    assert.equal((await rejection(hidden)).code, ABORTED)
    assert.equal(polls().length, 2)

    // An already aborted signal sends nothing at all.
    const before = wx.sent.length
    const again = await rejection(
      campusgate.waitForTier('university-registered', {
        timeoutMs: 20_000,
        signal: controller.signal,
      }),
    )
    assert.equal(again.code, ABORTED)
    assert.equal(wx.sent.length, before)
  })
})
