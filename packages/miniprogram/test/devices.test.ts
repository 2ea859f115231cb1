import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createCampusgate } from 'campusgate-miniprogram'
import { SANDBOX_APP } from '../../../src/sandbox/routes.js'
import { startService, type RunningService } from '../../../test/helpers/service.js'
import { PLATFORMS } from './platforms.js'

// Issue 46: one student, two devices (the mini-program on a phone and in the desktop messenger),
// each with the kit and its own storage. With one live key per user, each registration ended the
// other device's key, whose next call re-registered and ended the first's: 8 alternating calls
// made 8 registrations. With a session per device, each device registers once.

describe('two devices of one student, calling alternately', () => {
  let service: RunningService
  before(async () => {
    service = await startService()
  })
  after(() => service.close())

  it('for a minute make exactly two registrations, and neither device is signed out', async () => {
    const openId = `two-devices-${process.pid}`
    const messenger = `${service.url}/_sandbox/messenger`
    const phone = PLATFORMS.wx(messenger, openId)
    const desktop = PLATFORMS.wx(messenger, openId)
    const kits = [phone, desktop].map((platform) =>
      createCampusgate({ baseUrl: service.url, appId: SANDBOX_APP.appId, platform }),
    )
    const openIds = new Set<string>()
    // A minute of the service's time, a call every two seconds, alternating between the devices.
    for (let second = 0; second < 60; second += 2) {
      const kit = kits[(second / 2) % 2]
      const answer = await kit.request<{ openId: string }>({ url: '/session' })
      assert.equal(answer.statusCode, 200)
      openIds.add(answer.data.openId)
      service.clock.advance(2_000)
    }
    const registrations = [...phone.sent, ...desktop.sent].filter(
      (sent) => sent.method === 'POST' && new URL(sent.url).pathname === '/register/messenger',
    )
    assert.equal(registrations.length, 2)
    assert.equal(phone.logins + desktop.logins, 2)
    assert.deepEqual([...openIds], [openId])
    // Every answer the two devices got was one of campusgate's 200s: no 401 to recover from.
    for (const sent of [...phone.sent, ...desktop.sent]) assert.equal(sent.statusCode, 200)
  })

  it('names each device by deviceName, and logout({ scope: "all" }) ends both and forgets the key', async () => {
    const openId = `named-devices-${process.pid}`
    const messenger = `${service.url}/_sandbox/messenger`
    const phone = PLATFORMS.wx(messenger, openId)
    const desktop = PLATFORMS.wx(messenger, openId)
    const [onPhone, onDesktop] = [
      [phone, 'Ada’s phone'],
      [desktop, 'Ada’s desktop'],
    ].map(([platform, deviceName]) =>
      createCampusgate({
        baseUrl: service.url,
        appId: SANDBOX_APP.appId,
        platform: platform as typeof phone,
        deviceName: deviceName as string,
      }),
    )
    await onPhone.login()
    await onDesktop.login()
    const devices = (await onPhone.sessions()).map((one) => one.device).sort()
    assert.deepEqual(devices, ['Ada’s desktop', 'Ada’s phone'])
    assert.throws(
      () =>
        createCampusgate({
          baseUrl: service.url,
          appId: SANDBOX_APP.appId,
          platform: phone,
          deviceName: 'x'.repeat(65),
        }),
      TypeError,
    )

    const desktopKey = desktop.storage.get('campusgate.sessionKey') as string
    await onPhone.logout({ scope: 'all' })
    assert.equal(phone.storage.get('campusgate.sessionKey'), undefined)
    const ended = await fetch(`${service.url}/session`, {
      headers: { authorization: desktopKey, accept: 'application/vnd.service.v1+json' },
    })
    assert.equal(ended.status, 401)
    const logout = phone.sent.find((sent) => sent.url.includes('/logout'))
    assert.equal(new URL(logout!.url).search, '?scope=all')
  })
})
