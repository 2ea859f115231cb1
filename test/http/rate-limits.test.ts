import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { addressKey } from '../../src/http/rate-limit.js'
import { call, startService } from '../helpers/service.js'
import {
  attemptStatusesOf,
  decideAtProvider,
  followCallback,
  openLink,
  registerMessenger,
  requestConfirmationLink,
  sessionOf,
  startStack,
} from '../helpers/stack.js'

const statusesOf = async (requests: (() => Promise<{ status: number }>)[]) => {
  const statuses: number[] = []
  for (const request of requests) statuses.push((await request()).status)
  return statuses
}

describe('rate limits', () => {
  it('count a valid session key against its session, not its address', async () => {
    const stack = await startStack({ RATE_LIMIT_PER_ADDRESS: '4', RATE_LIMIT_PER_SESSION: '3' })
    try {
      // Three registrations: three of the address's four requests.
      const users = [
        await registerMessenger(stack),
        await registerMessenger(stack),
        await registerMessenger(stack),
      ]
      // A backend checks each user's key three times from this one address: 9 requests, all served.
      const checks = users.flatMap((user) =>
        [1, 2, 3].map(() => () => sessionOf(stack, user.sessionKey)),
      )
      assert.deepEqual(await statusesOf(checks), Array(9).fill(200))
      // Each key's own limit still holds.
      const over = await sessionOf(stack, users[0].sessionKey)
      assert.equal(over.status, 429)
      assert.match(over.headers.get('retry-after') ?? '', /^[1-9]\d*$/)
      assert.deepEqual(over.body, { error: '@too-many-requests/rate-limit-exceeded' })

      // Keys that are not valid count against the address: its fourth request, then 429.
      const guess = () =>
        call(`${stack.service.url}/session`, { headers: { authorization: 'x'.repeat(43) } })
      assert.deepEqual(await statusesOf([guess, guess]), [401, 429])
      const noKey = await call(`${stack.service.url}/session`)
      assert.equal(noKey.status, 429)
    } finally {
      await stack.close()
    }
  })

  it('count IPv6 clients per /64 and take the address the trusted proxy appended', async () => {
    const service = await startService({ TRUST_PROXY: '1', RATE_LIMIT_PER_ADDRESS: '2' })
    try {
      const from = (forwardedFor: string) => () =>
        call(`${service.url}/nowhere`, { headers: { 'x-forwarded-for': forwardedFor } })
      // Three addresses of one /64 share a counter; the next /64 has its own.
      assert.deepEqual(
        await statusesOf([
          from('2001:db8:1:2::1'),
          from('2001:db8:1:2:ffff::2'),
          from('2001:db8:1:2::3'),
          from('2001:db8:1:3::1'),
        ]),
        [404, 404, 429, 404],
      )
      // With one proxy trusted, what the client itself wrote on the left is not its address.
      assert.deepEqual(
        await statusesOf([
          from('198.51.100.1, 203.0.113.9'),
          from('198.51.100.2, 203.0.113.9'),
          from('198.51.100.3, 203.0.113.9'),
        ]),
        [404, 404, 429],
      )
    } finally {
      await service.close()
    }
  })

  it("count the address a gateway names in its own header with TRUST_PROXY='1 via NAME', never the request's X-Forwarded-For", async () => {
    // WeChat Cloud Hosting's gateway names the client in X-Original-Forwarded-For.
    const service = await startService({
      TRUST_PROXY: '1 via X-Original-Forwarded-For',
      RATE_LIMIT_PER_ADDRESS: '2',
    })
    try {
      const from = (headers: Record<string, string>) => () =>
        call(`${service.url}/nowhere`, { headers })
      // One client behind the gateway, whatever X-Forwarded-For it writes itself; another one
      // has its own counter.
      assert.deepEqual(
        await statusesOf([
          from({ 'x-original-forwarded-for': '198.51.100.7', 'x-forwarded-for': '192.0.2.1' }),
          from({ 'x-original-forwarded-for': '198.51.100.7', 'x-forwarded-for': '192.0.2.2' }),
          from({ 'x-original-forwarded-for': '198.51.100.7', 'x-forwarded-for': '192.0.2.3' }),
          from({ 'x-original-forwarded-for': '198.51.100.8' }),
        ]),
        [404, 404, 429, 404],
      )
      // The entry the gateway appended counts, not what the client wrote on its left; a request
      // without the header is the TCP peer's, whatever its X-Forwarded-For says.
      assert.deepEqual(
        await statusesOf([
          from({ 'x-original-forwarded-for': '203.0.113.1, 198.51.100.9' }),
          from({ 'x-original-forwarded-for': '203.0.113.2, 198.51.100.9' }),
          from({ 'x-original-forwarded-for': '203.0.113.3, 198.51.100.9' }),
          from({ 'x-forwarded-for': '192.0.2.10' }),
          from({ 'x-forwarded-for': '192.0.2.11' }),
          from({ 'x-forwarded-for': '192.0.2.12' }),
        ]),
        [404, 404, 429, 404, 404, 429],
      )
    } finally {
      await service.close()
    }
  })

  it('are off at 0', async () => {
    const service = await startService({
      RATE_LIMIT_PER_ADDRESS: '0',
      RATE_LIMIT_REGISTRATION_PER_ADDRESS: '0',
    })
    try {
      const open = () => call(`${service.url}/authorize/university?universityRegistrationCode=x`)
      const statuses = await statusesOf(Array(150).fill(open))
      assert.deepEqual(new Set(statuses), new Set([401]))
    } finally {
      await service.close()
    }
  })

  it('let the callback answer its neutral 200 over a limit, acting on nothing', async () => {
    // Registration, confirmation request and link: the three registration requests allowed.
    const stack = await startStack({ RATE_LIMIT_REGISTRATION_PER_ADDRESS: '3' })
    try {
      const user = await registerMessenger(stack)
      const link = await requestConfirmationLink(stack, user.sessionKey, 'member@example.edu')
      const opened = await openLink(link)
      assert.equal(opened.status, 301)
      const callback = await decideAtProvider(stack, user.openId, 'allow')
      const page = await followCallback(callback, opened.cookie)
      assert.equal(page.status, 200)
      assert.doesNotMatch(page.text, /linked/i)
      const json = await followCallback(callback, opened.cookie, 'application/json')
      assert.equal(json.status, 200)
      assert.equal(json.text, '{}')
      assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['redirected'])
      assert.equal((await sessionOf(stack, user.sessionKey)).body.tier, 'messenger-registered')
    } finally {
      await stack.close()
    }
  })
})

describe('addressKey', () => {
  it('keeps IPv4 addresses and cuts IPv6 addresses to their /64', () => {
    assert.equal(addressKey('192.0.2.7'), '192.0.2.7')
    assert.equal(addressKey('::ffff:192.0.2.7'), '192.0.2.7')
    assert.equal(addressKey('2001:db8::1'), '2001:db8:0:0::/64')
    assert.equal(addressKey('2001:0db8:0000:0042:1:2:3:4'), '2001:db8:0:42::/64')
    assert.equal(addressKey('::1'), '0:0:0:0::/64')
    assert.equal(addressKey('fe80::1%eth0'), 'fe80:0:0:0::/64')
    assert.equal(addressKey('64:ff9b::192.0.2.7'), '64:ff9b:0:0::/64')
  })
})
