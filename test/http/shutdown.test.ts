import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { createDb } from '../../src/db/database.js'
import { freshDatabase, type TestDatabase } from '../helpers/database.js'
import { register, serviceEnv, startPlatform, type Platform } from '../helpers/held-platform.js'
import { spawnService, waitUntilServing, type ServiceProcess } from '../helpers/process.js'
import { freePort } from '../helpers/service.js'

/** Resolves once a new TCP connection to `port` is refused. */
async function refusedAt(port: number): Promise<void> {
  for (;;) {
    const refused = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1')
      socket.once('connect', () => {
        socket.destroy()
        resolve(false)
      })
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'))
    })
    if (refused) return
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

describe('the process stopped with SIGTERM', () => {
  let platform: Platform
  let database: TestDatabase
  let run: ServiceProcess | null = null
  before(async () => {
    platform = await startPlatform()
  })
  after(async () => {
    run?.child.kill('SIGKILL')
    await platform.close()
  })

  async function start(
    extra: Record<string, string> = {},
  ): Promise<{ port: number; base: string }> {
    database = await freshDatabase()
    const port = await freePort()
    run = spawnService({ ...serviceEnv(port, database, platform, await freePort()), ...extra })
    const base = `http://127.0.0.1:${port}`
    await waitUntilServing(run, `${base}/healthz`)
    return { port, base }
  }

  it('finishes the registration in flight with 200, refuses new connections and exits 0', async () => {
    const { port, base } = await start()
    try {
      const inFlight = register(base, 'hold-in-flight')
      await platform.held()
      run!.child.kill('SIGTERM')
      await refusedAt(port)
      platform.release()
      const answered = await inFlight
      assert.equal(answered.status, 200, answered.text)
      assert.match(answered.body.sessionKey as string, /^[A-Za-z0-9_-]{43}$/)
      assert.equal(await run!.exited, 0, run!.stdout())

      // The answer was committed before the process exited.
      const db = createDb(database.url, { poolSize: 2 })
      try {
        const sessions = await db.kysely
          .selectFrom('sessions')
          .innerJoin('identities', 'identities.user_id', 'sessions.user_id')
          .select('identities.subject')
          .execute()
        assert.deepEqual(sessions, [{ subject: 'o-hold-in-flight' }])
      } finally {
        await db.kysely.destroy()
      }
    } finally {
      await database.drop()
    }
  })

  it('cuts a request that never completes after the grace and still exits', async () => {
    // Without the grace, this request could hold the process for all of REQUEST_TIMEOUT.
    const { port } = await start({ REQUEST_TIMEOUT: '10m' })
    const socket = connect(port, '127.0.0.1')
    socket.on('error', () => {})
    try {
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
      socket.write(
        'POST /register/messenger HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
          'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"appId"',
      )
      // Answered after the write, so the server holds the half-sent request when the signal comes.
      await waitUntilServing(run!, `http://127.0.0.1:${port}/healthz`)
      run!.child.kill('SIGTERM')
      assert.equal(await run!.exited, 1, run!.stdout())
      assert.match(run!.stdout(), /shutdown grace over/)
    } finally {
      socket.destroy()
      await database.drop()
    }
  })
})
