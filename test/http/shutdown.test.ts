import assert from 'node:assert/strict'
import { get } from 'node:http'
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

/** GET over a connection of its own: the status, or the error's code (ECONNREFUSED…). */
function getFresh(url: string): Promise<number | string> {
  return new Promise((resolve) => {
    const request = get(url, { agent: false }, (response) => {
      response.resume()
      response.once('end', () => resolve(response.statusCode ?? 0))
    })
    request.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message))
  })
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

  it('with SHUTDOWN_DELAY, answers /readyz 503 at once, keeps serving new connections for the delay, then answers the request in flight and exits 0', async () => {
    // Long enough that a loaded machine still fits the checks below well inside it.
    const delayMs = 3000
    const { port, base } = await start({ SHUTDOWN_DELAY: `${delayMs / 1000}s` })
    try {
      const signalled = Date.now()
      run!.child.kill('SIGTERM')
      // Readiness flips first, while the listener still serves.
      let readiness: number | string = 200
      while (readiness === 200) readiness = await getFresh(`${base}/readyz`)
      assert.equal(readiness, 503)
      // At once: well before the listener closes at the end of the delay.
      const notReadyAfter = Date.now() - signalled
      assert.ok(notReadyAfter < delayMs / 2, `${notReadyAfter} ms`)
      const readyz = await fetch(`${base}/readyz`)
      assert.equal(readyz.status, 503)
      assert.deepEqual(await readyz.json(), { error: '@service-unavailable/not-ready' })

      // A request accepted during the delay is in flight when the listener closes.
      const inFlight = register(base, 'hold-through-the-delay')
      await platform.held()

      // A stream of requests, each on a new connection, until one is refused.
      const answers: Array<{ at: number; answer: number | string }> = []
      for (;;) {
        const answer = await getFresh(`${base}/healthz`)
        answers.push({ at: Date.now() - signalled, answer })
        if (answer !== 200) break
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      // Every connection before the delay's end was served; the first one not served came after
      // it. That one is refused; or reset, when it reached the accept queue just as the listener
      // closed; or answered 503, when it was accepted just before and read once the server was
      // closing (Fastify's answer to a request that arrives then). How many fit in the delay
      // depends on the machine's load, so only a few are asked for.
      const last = answers.at(-1)!
      assert.ok(['ECONNREFUSED', 'ECONNRESET', 503].includes(last.answer), JSON.stringify(answers))
      assert.ok(last.at >= delayMs, `refused ${last.at} ms after the signal`)
      assert.ok(answers.length >= 5, JSON.stringify(answers))
      await refusedAt(port)

      platform.release()
      const answered = await inFlight
      assert.equal(answered.status, 200, answered.text)
      assert.equal(await run!.exited, 0, run!.stdout())
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
