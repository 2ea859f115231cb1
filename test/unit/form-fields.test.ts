import assert from 'node:assert/strict'
import { test } from 'node:test'
import { formFields } from '../../src/sessions/introspection.js'

// POST /introspect's form parser (docs/tier-guard.md, "POST /introspect (token introspection,
// RFC 7662)"): one pass, whatever the body repeats.

test('reads each field of a form body once, decoded', () => {
  assert.deepEqual(
    { ...formFields('token=a%2Bb+c&token_type_hint=access_token&&') },
    { token: 'a+b c', token_type_hint: 'access_token' },
  )
})

test('makes a field sent twice a list of its two values, which the body schema refuses', () => {
  assert.deepEqual({ ...formFields('token=a&token=b') }, { token: ['a', 'b'] })
})

test('keeps no more than two values of a field however often a 16 KiB body repeats it', () => {
  // The list a repeated field becomes is the parser's only growing structure: bounded, no field
  // costs more than a step however often it comes, so the whole body is read in one pass.
  for (const [body, name] of [
    ['t&'.repeat(8192), 't'],
    ['token=a&'.repeat(2048), 'token'],
    [`token=k&${'x=1&'.repeat(4094)}`, 'x'],
  ] as const) {
    assert.equal(body.length <= 16 * 1024, true)
    const fields = formFields(body)
    const values = fields[name]
    assert.ok(Array.isArray(values), name)
    assert.equal(values.length, 2, name)
  }
})
