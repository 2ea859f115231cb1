import assert from 'node:assert/strict'
import { createServer, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { oidcSignInAndReturn, oidcUserInBrowser, startOidcStack } from '../helpers/oidc-stack.js'
import type { OidcStack } from '../helpers/oidc-stack.js'
import { logEvents } from '../helpers/logs.js'
import { call, MEDIA_TYPE, startService, type RunningService } from '../helpers/service.js'
import {
  attemptStatusesOf,
  decideAtProvider,
  followCallback,
  openLink,
  registerMessenger,
  requestConfirmationLink,
  sessionOf,
  startStack,
  userRowOf,
  type Stack,
} from '../helpers/stack.js'

const LINKED = /<h1>University account linked<\/h1>/
const FAILED = /<h1>Linking failed<\/h1>/

/** The callback page says the link failed, the attempt is failed, and the user is still tier 1. */
async function assertFailedAndNothingLinked(
  stack: Stack,
  user: { openId: string; sessionKey: string },
  done: { status: number; text: string },
): Promise<void> {
  assert.equal(done.status, 200)
  assert.match(done.text, FAILED)
  assert.deepEqual(await attemptStatusesOf(stack, user.openId), ['failed'])
  assert.equal((await sessionOf(stack, user.sessionKey)).body.tier, 'messenger-registered')
  const row = await userRowOf(stack, user.openId)
  assert.equal(row.university_token, null)
  assert.equal(row.university_subject, null)
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

async function shut(server: Server): Promise<void> {
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
}

async function rowCounts(service: RunningService): Promise<{ users: number; sessions: number }> {
  const count = async (table: 'users' | 'sessions') =>
    Number(
      (
        await service.db.kysely
          .selectFrom(table)
          .select((e) => e.fn.countAll<number>().as('n'))
          .execute()
      )[0].n,
    )
  return { users: await count('users'), sessions: await count('sessions') }
}

describe('POST /register/messenger when the messenger platform times out', () => {
  // Both answer only long after campusgate's 5 s timeout, and then with a valid login: a 502
  // proves campusgate stopped waiting.
  const late: ServerResponse[] = []
  const lateLogin = JSON.stringify({ openid: 'o-late', session_key: 'sk-late' })
  let silent: Server
  let slow: Server
  const servers: Record<string, () => Server> = {
    'accepts the connection and never answers': () => silent,
    'sends its headers, then the body too slowly': () => slow,
  }
  before(async () => {
    silent = createServer((_req, res) => void late.push(res))
    slow = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.write(lateLogin.slice(0, 10))
      late.push(res)
    })
    await Promise.all([listen(silent), listen(slow)])
  })
  after(async () => {
    await Promise.all([shut(silent), shut(slow)])
  })

  for (const [behaviour, server] of Object.entries(servers)) {
    it(`answers 502 and creates no session when the platform ${behaviour}`, async () => {
      const port = (server().address() as AddressInfo).port
      const service = await startService({
        MESSENGER_API_BASE_URL: `http://127.0.0.1:${port}`,
        UNIVERSITY_AUTHORIZE_URL: 'http://127.0.0.1:9/authorise',
        UNIVERSITY_TOKEN_URL: 'http://127.0.0.1:9/token',
        UNIVERSITY_CLIENT_ID: 'id',
        UNIVERSITY_CLIENT_SECRET: 'secret',
      })
      try {
        const response = await call(`${service.url}/register/messenger`, {
          method: 'POST',
          json: { appId: 'wx-app', appSecret: 'app-secret-value', code: 'login-code-value' },
        })
        assert.equal(response.status, 502)
        assert.equal(response.headers.get('content-type'), MEDIA_TYPE)
        assert.deepEqual(response.body, { error: '@bad-gateway/messenger-platform-unavailable' })
        assert.equal(late.length, 1, 'the platform was asked once')
        // The platform answers at last; the request is long over.
        late.pop()!.end(lateLogin)
        assert.deepEqual(await rowCounts(service), { users: 0, sessions: 0 })
        assert.match(service.logs(), /TimeoutError/)
      } finally {
        await service.close()
      }
    })
  }
})

/**
 * An endpoint of the identity provider behind a switch: forwards to the provider while up, and
 * while down drops every connection without an answer.
 */
interface Switched {
  url: string
  target: string
  down: boolean
  close(): Promise<void>
}

async function startSwitched(): Promise<Switched> {
  const switched = { url: '', target: '', down: false, close: () => shut(server) }
  const server = createServer((req, res) => {
    if (switched.down) {
      req.socket.destroy()
      return
    }
    fetch(`${switched.target}${req.url}`).then(
      async (answer) => {
        res.writeHead(answer.status, {
          'content-type': answer.headers.get('content-type') ?? 'text/plain',
        })
        res.end(Buffer.from(await answer.arrayBuffer()))
      },
      () => req.socket.destroy(),
    )
  })
  switched.url = await listen(server)
  return switched
}

describe('tier 2 (UCL-API) when a provider endpoint is down during the callback', () => {
  let stack: Stack
  const endpoints: Record<'token' | 'user data', Switched> = {} as never
  before(async () => {
    endpoints.token = await startSwitched()
    endpoints['user data'] = await startSwitched()
    stack = await startStack({
      UNIVERSITY_TOKEN_URL: `${endpoints.token.url}/_sandbox/university/token`,
      UNIVERSITY_USERINFO_URL: `${endpoints['user data'].url}/_sandbox/university/user/data`,
    })
    for (const endpoint of Object.values(endpoints)) endpoint.target = stack.providersUrl
  })
  after(async () => {
    await stack.close()
    for (const endpoint of Object.values(endpoints)) await endpoint.close()
  })

  for (const name of ['token', 'user data'] as const) {
    it(`fails the attempt and links nothing while the ${name} endpoint is down; the emailed link links once it is back`, async () => {
      const user = await registerMessenger(stack)
      const link = await requestConfirmationLink(stack, user.sessionKey, 'student@example.edu')
      const opened = await openLink(link)
      assert.equal(opened.status, 301)

      endpoints[name].down = true
      let done
      try {
        done = await followCallback(
          await decideAtProvider(stack, user.openId, 'allow'),
          opened.cookie,
        )
      } finally {
        endpoints[name].down = false
      }
      await assertFailedAndNothingLinked(stack, user, done)

      const again = await openLink(link)
      assert.equal(again.status, 301)
      const linked = await followCallback(
        await decideAtProvider(stack, user.openId, 'allow'),
        again.cookie,
      )
      assert.match(linked.text, LINKED)
      assert.equal((await sessionOf(stack, user.sessionKey)).body.tier, 'university-registered')
      assert.deepEqual((await attemptStatusesOf(stack, user.openId)).sort(), [
        'completed',
        'failed',
      ])
    })
  }
})

describe('tier 2 (OpenID Connect) when a provider endpoint is down during the callback', () => {
  let stack: OidcStack
  before(async () => {
    stack = await startOidcStack()
  })
  after(() => stack.close())

  // One member each: a university identity links to one messenger user at a time.
  for (const [endpoint, member] of [
    ['token', 'alice'],
    ['userinfo', 'bob'],
  ] as const) {
    it(`fails the attempt and links nothing while the ${endpoint} endpoint answers 503; the emailed link links once it is back`, async () => {
      const user = await oidcUserInBrowser(stack)
      stack.oidc.setOutage(endpoint)
      let done
      try {
        done = (await oidcSignInAndReturn(stack, user, { member })).done
      } finally {
        stack.oidc.setOutage(null)
      }
      await assertFailedAndNothingLinked(stack, user, done)
      // Issue 25: the log line names the call that failed and the status it got.
      const failure = logEvents(stack.service, 'university-link-failed').at(-1)
      assert.match(String(failure?.reason), new RegExp(`^${endpoint} request.* failed: HTTP 503, `))

      const again = await openLink(user.link)
      assert.equal(again.status, 301)
      const linked = await oidcSignInAndReturn(
        stack,
        { location: again.location, cookie: again.cookie },
        { member },
      )
      assert.match(linked.done.text, LINKED)
      assert.equal((await sessionOf(stack, user.sessionKey)).body.tier, 'university-registered')
    })
  }
})
