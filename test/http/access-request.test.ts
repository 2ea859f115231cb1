import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { AccessDocument } from '../../src/accounts/access.js'
import { cipherFor } from '../../src/secrets-at-rest.js'
import { campusgate, consoleLink, fromConsole, signIn, TEST_KEY } from '../helpers/console.js'
import { call, MEDIA_TYPE } from '../helpers/service.js'
import {
  codeOf,
  registerMessenger,
  registerUniversity,
  requestConfirmationLink,
  startStack,
  userRowOf,
  type Stack,
} from '../helpers/stack.js'

/**
 * docs/console.md, "Access requests": GET /user/data, the console's "Download data" and
 * `campusgate users export` give one document of everything campusgate holds about the user, and
 * no secret: no key, code, cookie, token, messenger session key, mail body or link.
 */
describe('access requests (GET /user/data, Download data, users export)', () => {
  let stack: Stack

  before(async () => {
    stack = await startStack({ DATA_ENCRYPTION_KEY: TEST_KEY })
    stack.service.clock.advance(Date.now() - stack.service.clock.now().getTime())
  })
  after(() => stack.close())

  it('answers one document by all three ways, holding everything and no secret, each audited', async () => {
    const user = await registerUniversity(stack, 'access@example.edu')
    // A second confirmation mail, its link unused: the code and link exist only in the mail.
    const link = await requestConfirmationLink(stack, user.sessionKey, 'access@example.edu')
    const mail = stack.smtp.messages.at(-1)!
    const row = await userRowOf(stack, user.openId)
    const { cipher } = cipherFor(stack.service.config)
    const keyHash = await stack.service.db.kysely
      .selectFrom('sessions')
      .select('key_hash')
      .where('user_id', '=', row.id)
      .executeTakeFirstOrThrow()
    const codeHash = await stack.service.db.kysely
      .selectFrom('registration_codes')
      .select('code_hash')
      .where('user_id', '=', row.id)
      .execute()
    const secrets = [
      user.sessionKey,
      keyHash.key_hash,
      ...codeHash.map((code) => code.code_hash),
      codeOf(link),
      link,
      row.messenger_session_key!,
      cipher.decrypt(row.messenger_session_key!),
      row.university_token!,
      cipher.decrypt(row.university_token!),
      row.university_binding!,
      (mail.text ?? '').trim(),
      String(mail.html ?? '').trim(),
    ]

    const asked = await call(`${stack.service.url}/user/data`, {
      headers: { authorization: user.sessionKey },
    })
    assert.equal(asked.status, 200, asked.text)
    assert.equal(asked.headers.get('content-type'), MEDIA_TYPE)
    const document = asked.body as unknown as AccessDocument
    assert.equal(document.user.openId, user.openId)
    assert.equal(document.user.messengerSessionKeyHeld, true)
    assert.equal(document.university?.email, row.university_email)
    assert.equal(document.university?.tokenHeld, true)
    assert.equal(document.sessions.length, 1)
    assert.ok(document.activeDays.length >= 1)
    assert.ok(document.registrationCodes.length >= 1, 'the unused code')
    assert.ok(document.universityAttempts.some((a) => a.status === 'completed'))
    assert.equal(document.mail.length, 2)
    assert.ok(document.mail.every((m) => m.to === 'access@example.edu'))
    assert.ok(document.audit.some((event) => event.type === 'university-linked'))

    const viaCli = await campusgate(stack.service, 'users', 'export', user.openId)
    assert.equal(viaCli.code, 0, viaCli.err)
    const exported = JSON.parse(viaCli.out) as AccessDocument

    const alice = await signIn(stack.service, (await consoleLink(stack.service, 'alice')).token)
    const download = await fromConsole(
      stack.service,
      alice,
      `/console/users/${encodeURIComponent(user.openId)}/data`,
    )
    assert.equal(download.status, 200)
    assert.match(
      download.headers.get('content-disposition') ?? '',
      /^attachment; filename="campusgate-sandbox-[\w-]+\.json"$/,
    )
    assert.equal(download.headers.get('cache-control'), 'no-store')
    const downloaded = JSON.parse(download.text) as AccessDocument

    // One document: the same but for when it was made and the exports since recorded.
    const comparable = (doc: AccessDocument) => ({
      ...doc,
      exportedAt: null,
      audit: doc.audit.filter((event) => event.type !== 'data-export'),
    })
    assert.deepEqual(comparable(exported), comparable(document))
    assert.deepEqual(comparable(downloaded), comparable(document))

    for (const text of [asked.text, viaCli.out, download.text]) {
      for (const secret of secrets) {
        assert.ok(secret.length > 8)
        assert.ok(!text.includes(secret), `the document holds no secret (${secret.slice(0, 12)}…)`)
      }
      assert.doesNotMatch(text, /universityRegistrationCode|https?:\/\/[^"]*authorize/)
    }

    const audited = await stack.service.db.kysely
      .selectFrom('audit_events')
      .select('actor')
      .where('type', '=', 'data-export')
      .where('open_id', '=', user.openId)
      .orderBy('at')
      .orderBy('id')
      .execute()
    // The command line keeps its own clock: compared as a set.
    assert.deepEqual(audited.map((event) => event.actor.split(':')[0]).sort(), [
      'api',
      'cli',
      'console',
    ])
    assert.ok(audited.some((event) => event.actor === 'console:alice'))
  })

  it('answers only the caller, and needs a session key', async () => {
    const other = await registerMessenger(stack)
    const mine = await registerMessenger(stack)
    const answer = await call(`${stack.service.url}/user/data`, {
      headers: { authorization: mine.sessionKey },
    })
    assert.equal(answer.status, 200)
    assert.ok(!answer.text.includes(other.openId))
    const none = await call(`${stack.service.url}/user/data`)
    assert.equal(none.status, 403)
    assert.deepEqual(none.body, { error: '@forbidden/missing-authorization-header' })
    const unknown = await campusgate(stack.service, 'users', 'export', 'nobody-here')
    assert.equal(unknown.code, 3)
  })
})
