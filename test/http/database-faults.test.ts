import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { freshDatabase, TEST_DIALECT, type TestDatabase } from '../helpers/database.js'
import { call, WITHOUT_ADDRESS_LIMITS } from '../helpers/service.js'
import { registerMessenger, sessionOf, startStack, type Stack } from '../helpers/stack.js'
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js'

if (TEST_DIALECT === 'postgres') {
  describe('PostgreSQL lost and back (issue 19)', () => {
    let database: TestDatabase
    let proxy: TcpProxy
    let stack: Stack

    before(async () => {
      database = await freshDatabase()
      const server = new URL(process.env.DATABASE_URL!)
      proxy = await startTcpProxy(Number(server.port || 5432), server.hostname)
      const viaProxy = new URL(database.url)
      viaProxy.host = `127.0.0.1:${proxy.port}`
      stack = await startStack(
        { DATABASE_URL: viaProxy.toString(), LOG_LEVEL: 'warn' },
        WITHOUT_ADDRESS_LIMITS,
      )
    })
    after(async () => {
      await stack.close()
      await proxy.close()
      await database.drop()
    })

    it('answers 503 with Retry-After within seconds while it is unreachable, lives on, and serves again without a restart', async () => {
      const before = await Promise.all([1, 2, 3, 4, 5].map(() => registerMessenger(stack)))
      // Load that keeps going through the cut and the return.
      const statuses: number[] = []
      let loading = true
      const load = (async () => {
        while (loading) {
          const user = before[statuses.length % before.length]
          statuses.push((await sessionOf(stack, user.sessionKey)).status)
        }
      })()

      await proxy.cut()
      const started = Date.now()
      const down = await sessionOf(stack, before[0].sessionKey)
      assert.ok(Date.now() - started < 10_000, 'answered within seconds, not a hang')
      assert.equal(down.status, 503, down.text)
      assert.deepEqual(down.body, { error: '@service-unavailable/database-unavailable' })
      assert.match(down.headers.get('retry-after') ?? '', /^[1-9]\d*$/)
      const register = await call(`${stack.service.url}/register/messenger`, {
        method: 'POST',
        json: { appId: 'wx-sandbox-app', appSecret: 'sandbox-app-secret', code: 'whatever' },
      })
      // The platform is asked first; then the database is needed and is not there.
      assert.ok([401, 503].includes(register.status), register.text)

      await proxy.restore()
      let back = await sessionOf(stack, before[0].sessionKey)
      for (let i = 0; i < 50 && back.status !== 200; i += 1) {
        await new Promise((done) => setTimeout(done, 100))
        back = await sessionOf(stack, before[0].sessionKey)
      }
      loading = false
      await load
      assert.equal(back.status, 200, back.text)
      // No key issued before the cut was lost.
      for (const user of before) assert.equal((await sessionOf(stack, user.sessionKey)).status, 200)
      assert.ok((await registerMessenger(stack)).sessionKey.length > 0)
      assert.deepEqual(
        statuses.filter((status) => status !== 200 && status !== 503),
        [],
        'only 200 or 503 under load',
      )
      assert.ok(statuses.includes(503) && statuses.includes(200))
      assert.doesNotMatch(stack.service.logs(), /"level":50.*unexpected error/)
    })
  })
} else {
  describe('SQLite busy (issue 19)', () => {
    let stack: Stack
    before(async () => {
      stack = await startStack({ LOG_LEVEL: 'warn' }, WITHOUT_ADDRESS_LIMITS)
    })
    after(() => stack.close())

    it('waits out another writer holding the file instead of failing', async () => {
      const users = await Promise.all([1, 2, 3].map(() => registerMessenger(stack)))
      const path = stack.service.config.database.url.slice('sqlite:'.length)
      // Another process (better-sqlite3 waits synchronously, so not this one) holds the write lock
      // for half a second.
      const holder = spawn(
        process.execPath,
        [
          '-e',
          `const db = require('better-sqlite3')(${JSON.stringify(path)});
           db.exec('BEGIN IMMEDIATE'); console.log('locked');
           setTimeout(() => { db.exec('COMMIT'); db.close() }, 500)`,
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      )
      const exited = once(holder, 'exit')
      await once(holder.stdout, 'data')
      const answers = await Promise.all([
        call(`${stack.service.url}/logout`, {
          method: 'POST',
          headers: { authorization: users[0].sessionKey },
        }),
        call(`${stack.service.url}/user`, {
          method: 'DELETE',
          headers: { authorization: users[1].sessionKey },
        }),
        registerMessenger(stack).then(() => ({ status: 200, text: '' })),
      ])
      await exited
      for (const answer of answers) assert.equal(answer.status, 200, answer.text)
      assert.equal((await sessionOf(stack, users[2].sessionKey)).status, 200)
    })
  })
}
