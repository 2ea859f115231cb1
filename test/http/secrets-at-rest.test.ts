import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { cipherFor } from '../../src/secrets-at-rest.js'
import { TEST_DIALECT } from '../helpers/database.js'
import { call, startService, type RunningService } from '../helpers/service.js'
import {
  codeOf,
  decideAtProvider,
  followCallback,
  openLink,
  registerMessenger,
  requestConfirmationLink,
  startStack,
  type Stack,
} from '../helpers/stack.js'

/** Every file below `dir`, whole, as one binary string (SQLite file, -wal, -shm, anything else). */
function filesBelow(dir: string): string {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => readFileSync(join(entry.parentPath, entry.name)).toString('latin1'))
    .join('\n')
}

describe('secrets at rest (issue 15)', () => {
  let stack: Stack
  before(async () => {
    stack = await startStack()
  })
  after(() => stack.close())

  it('leaves no session key, code, cookie, messenger session key or token in clear in the database files or a dump', async () => {
    const secrets: string[] = []
    // A tier-2 user, a user with a pending link, and a user who logged out.
    const linked = await registerMessenger(stack)
    const linkA = await requestConfirmationLink(stack, linked.sessionKey, 'a@example.edu')
    const opened = await openLink(linkA)
    await followCallback(await decideAtProvider(stack, linked.openId, 'allow'), opened.cookie)
    const pending = await registerMessenger(stack)
    const linkB = await requestConfirmationLink(stack, pending.sessionKey, 'b@example.edu')
    const openedB = await openLink(linkB)
    const gone = await registerMessenger(stack)
    await call(`${stack.service.url}/logout`, {
      method: 'POST',
      headers: { authorization: gone.sessionKey },
    })
    secrets.push(
      linked.sessionKey,
      pending.sessionKey,
      gone.sessionKey,
      codeOf(linkA),
      codeOf(linkB),
    )
    secrets.push(opened.cookie.split('=')[1], openedB.cookie.split('=')[1])
    // What the service keeps encrypted, read back through its own key.
    const { cipher } = cipherFor(stack.service.config)
    const identities = await stack.service.db.kysely.selectFrom('identities').selectAll().execute()
    for (const identity of identities) {
      if (identity.secret !== null) secrets.push(cipher.decrypt(identity.secret))
    }
    assert.ok(secrets.length >= 10)
    assert.ok(
      secrets.some((secret) => secret.startsWith('uclapi-sandbox-')),
      'the token is among them',
    )

    let stored: string
    if (TEST_DIALECT === 'sqlite') {
      stored = filesBelow(dirname(stack.service.config.database.url.slice('sqlite:'.length)))
    } else {
      const url = new URL(stack.service.config.database.url)
      const schema = /search_path=(\w+)/.exec(url.searchParams.get('options') ?? '')![1]
      url.search = ''
      stored = execFileSync('pg_dump', ['--schema', schema, url.toString()], {
        encoding: 'latin1',
        maxBuffer: 64 * 1024 * 1024,
      })
    }
    assert.ok(stored.length > 0)
    for (const secret of secrets)
      assert.ok(!stored.includes(secret), `found in clear: ${secret.slice(0, 6)}…`)
  })
})

describe('.eml files of the outbox folder (issue 15)', () => {
  let service: RunningService
  let outboxDir: string
  before(async () => {
    outboxDir = mkdtempSync(join(tmpdir(), 'campusgate-outbox-'))
    service = await startService(
      {},
      { tweak: (config) => ({ ...config, mail: { ...config.mail, outboxDir } }) },
    )
  })
  after(async () => {
    await service.close()
    rmSync(outboxDir, { recursive: true, force: true })
  })

  it('are deleted with the user on erasure', async () => {
    const login = await fetch(`${service.url}/_sandbox/messenger/login-codes`, { method: 'POST' })
    const { code, appId, appSecret } = (await login.json()) as Record<string, string>
    const registered = await call(`${service.url}/register/messenger`, {
      method: 'POST',
      json: { appId, appSecret, code },
    })
    const auth = { authorization: registered.body.sessionKey as string }
    await call(`${service.url}/register/university`, {
      method: 'POST',
      headers: auth,
      json: { email: 'eml@example.edu' },
    })
    await service.mailWorker.runOnce()
    const [mail] = await service.db.kysely.selectFrom('mail_outbox').select('id').execute()
    const file = join(outboxDir, `${mail.id}.eml`)
    assert.ok(existsSync(file))
    assert.equal(
      (await call(`${service.url}/user`, { method: 'DELETE', headers: auth })).status,
      200,
    )
    assert.ok(!existsSync(file), 'the file holding the link went with the user')
  })
})
