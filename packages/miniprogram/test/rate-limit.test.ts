import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { CampusgateError, createCampusgate, MAX_RETRY_AFTER_SECONDS } from 'campusgate-miniprogram'
import { SANDBOX_APP } from '../../../src/sandbox/routes.js'
import { startService, type RunningService } from '../../../test/helpers/service.js'
import { createWx } from './platforms.js'

/** A user whose key may make two requests per window once signed in (the sign-in's look is one). */
async function limitedUser(service: RunningService, openId: string) {
  const wx = createWx(`${service.url}/_sandbox/messenger`, openId)
  const campusgate = createCampusgate({
    baseUrl: service.url,
    appId: SANDBOX_APP.appId,
    platform: wx,
  })
  await campusgate.login()
  wx.sent.length = 0
  return { wx, campusgate }
}

describe('campusgate-miniprogram and 429', () => {
  describe('a Retry-After of at most ten seconds', () => {
    let service: RunningService
    before(async () => {
      service = await startService({ RATE_LIMIT_PER_SESSION: '3', RATE_LIMIT_WINDOW: '2s' })
    })
    after(() => service.close())

    it('is waited out once, then the request is sent again', async () => {
      const { wx, campusgate } = await limitedUser(service, `limited-${process.pid}`)
      await campusgate.session()
      await campusgate.session()
      const started = Date.now()
      const third = await campusgate.session()
      const waited = Date.now() - started
      assert.equal(typeof third.openId, 'string')
      assert.equal(wx.sent.length, 4)
      assert.ok(wx.logins === 1, 'a 429 is no reason to log in again')
      assert.deepEqual(
        wx.sent.map((sent) => sent.statusCode),
        [200, 200, 429, 200],
      )
      const retryAfter = Number(wx.sent[2].responseHeader!['retry-after'])
      assert.ok(retryAfter >= 1 && retryAfter <= MAX_RETRY_AFTER_SECONDS, String(retryAfter))
      assert.ok(waited >= retryAfter * 1000 - 50, `waited ${waited} ms for ${retryAfter} s`)
    })
  })

  describe('a longer Retry-After', () => {
    let service: RunningService
    before(async () => {
      service = await startService({ RATE_LIMIT_PER_SESSION: '3', RATE_LIMIT_WINDOW: '1m' })
    })
    after(() => service.close())

    it('rejects at once with the 429', async () => {
      const { wx, campusgate } = await limitedUser(service, `limited-long-${process.pid}`)
      await campusgate.session()
      await campusgate.session()
      const started = Date.now()
      const error = await campusgate.session().catch((reason: unknown) => reason)
      assert.ok(error instanceof CampusgateError)
      assert.equal(error.status, 429)
      assert.equal(error.code, '@too-many-requests/rate-limit-exceeded')
      const retryAfter = Number(wx.sent[2].responseHeader!['retry-after'])
      assert.ok(retryAfter > MAX_RETRY_AFTER_SECONDS, String(retryAfter))
      assert.equal(error.retryAfter, retryAfter, 'the caller learns how long to wait')
      assert.ok(Date.now() - started < 5_000)
      assert.equal(wx.sent.length, 3)
    })
  })
})
