import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { classifyRow, parseDatetime, type OriginalRow } from '../../src/original/rows.js'

const NOW = Date.parse('2026-06-01T12:00:00Z')
const TTL = 30 * 24 * 3600_000
const KEY = 'ab'.repeat(32)

function row(changes: Partial<OriginalRow> = {}): OriginalRow {
  return {
    wechatOpenId: `${' '.repeat(36)}oAbCdEfGhIjKlMnOpQrStUvWxYz0`,
    uclcssaSessionKey: KEY,
    lastUsed: NOW - 3600_000,
    wechatSessionKey: 'tiihtNczf5v6AKRyjwEUhQ==',
    uclapiToken: '',
    ...changes,
  }
}

describe("the original server's rows", () => {
  it('a live row: padding removed, expiry LastUsed + SESSION_TTL, keys untouched', () => {
    assert.deepEqual(classifyRow(row(), 1, NOW, TTL), {
      kind: 'live',
      openId: 'oAbCdEfGhIjKlMnOpQrStUvWxYz0',
      sessionKey: KEY,
      messengerSessionKey: 'tiihtNczf5v6AKRyjwEUhQ==',
      lastUsed: NOW - 3600_000,
      expiresAt: NOW - 3600_000 + TTL,
    })
  })

  it('expired when LastUsed + SESSION_TTL is not after now', () => {
    assert.equal(classifyRow(row({ lastUsed: NOW - TTL }), 1, NOW, TTL).kind, 'expired')
    assert.equal(classifyRow(row({ lastUsed: NOW - TTL + 1 }), 1, NOW, TTL).kind, 'live')
  })

  it("the original's logout (an empty messenger session key) is not brought back", () => {
    assert.equal(classifyRow(row({ wechatSessionKey: '' }), 1, NOW, TTL).kind, 'logged-out')
  })

  it('invalid: an empty openId (named by position) or a key that is not 64 hex characters', () => {
    assert.deepEqual(classifyRow(row({ wechatOpenId: '   ' }), 7, NOW, TTL), {
      kind: 'invalid',
      name: 'row 7',
      reason: 'empty openId',
    })
    for (const key of ['', KEY.slice(1), `${KEY}0`, `${KEY.slice(1)}g`, ` ${KEY.slice(1)}`]) {
      const verdict = classifyRow(row({ uclcssaSessionKey: key }), 1, NOW, TTL)
      assert.equal(verdict.kind, 'invalid', JSON.stringify(key))
      assert.ok(verdict.kind === 'invalid' && !verdict.name.includes(key || '-'), 'no key named')
    }
    assert.equal(
      classifyRow(row({ uclcssaSessionKey: KEY.toUpperCase() }), 1, NOW, TTL).kind,
      'live',
    )
    assert.equal(classifyRow(row({ lastUsed: null }), 1, NOW, TTL).kind, 'invalid')
  })

  it('a LastUsed ahead of the clock counts as now', () => {
    const verdict = classifyRow(row({ lastUsed: NOW + 3600_000 }), 1, NOW, TTL)
    assert.ok(verdict.kind === 'live')
    assert.equal(verdict.expiresAt, NOW + TTL)
  })

  it('LastUsed is read in the zone the original wrote it in', () => {
    assert.equal(parseDatetime('2026-06-01 12:00:00', 'Z'), NOW)
    assert.equal(parseDatetime('2026-06-01 20:00:00', '+08:00'), NOW)
    assert.equal(parseDatetime('2026-06-01 07:30:00.250', '-04:30'), NOW + 250)
    assert.equal(
      parseDatetime('2026-06-01 12:00:00', 'local'),
      new Date(2026, 5, 1, 12, 0, 0).getTime(),
    )
    for (const text of ['0000-00-00 00:00:00', '2026-13-01 00:00:00', 'yesterday', null]) {
      assert.equal(parseDatetime(text, 'Z'), null, String(text))
    }
    assert.equal(parseDatetime('2026-06-01 12:00:00', '+25:00'), null)
  })
})
