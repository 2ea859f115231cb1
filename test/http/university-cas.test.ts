import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { readAttributes } from '../../src/config/university-attributes.js'
import { createSandboxServer } from '../../src/sandbox/routes.js'
import { createCasProtocol, serviceUrl } from '../../src/university/cas/cas-protocol.js'
import type {
  AttemptStart,
  CallbackRequest,
  UniversityProtocol,
} from '../../src/university/protocol.js'
import { TestClock } from '../helpers/clock.js'
import { Browser, signInAt, startLemonLdap, type LemonLdap } from '../helpers/lemonldap.js'

// docs/university-providers.md, "CAS": the CAS protocol against the sandbox's CAS server, against
// LemonLDAP::NG from Debian's packages, and against a server that answers what it should not.

const PUBLIC_BASE_URL = 'http://campusgate.test'
const CALLBACK = `${PUBLIC_BASE_URL}/authorize/university/callback`
const CAS_ATTRIBUTES = readAttributes({}, 'cas')!

function attempt(state = `openid-${Math.random().toString(36).slice(2)}`): AttemptStart {
  return { state, cookie: `cookie-${Math.random().toString(36).slice(2)}` }
}

/** The callback as the route reads it from the URL the CAS server sent the browser to. */
function callbackOf(location: string): CallbackRequest {
  const url = new URL(location)
  assert.equal(`${url.origin}${url.pathname}`, CALLBACK)
  return {
    method: 'GET',
    params: Object.fromEntries(url.searchParams),
    attemptCookie: 'cookie',
    ip: '127.0.0.1',
  }
}

function casProtocol(casUrl: string, version: 2 | 3 = 3): UniversityProtocol {
  return createCasProtocol({
    casUrl,
    version,
    publicBaseUrl: PUBLIC_BASE_URL,
    clientId: 'campusgate',
    attributes: CAS_ATTRIBUTES,
    timeoutMs: 5000,
  })
}

describe('CAS against the sandbox CAS server', () => {
  let sandbox: FastifyInstance
  let casUrl: string
  const clock = new TestClock(Date.now())
  before(async () => {
    sandbox = await createSandboxServer({
      messenger: false,
      university: true,
      universityProtocol: 'cas',
      clientId: 'campusgate',
      clientSecret: '',
      callbackUrl: () => CALLBACK,
      clock,
    })
    await sandbox.listen({ host: '127.0.0.1', port: 0 })
    casUrl = `http://127.0.0.1:${(sandbox.server.address() as AddressInfo).port}/_sandbox/cas`
  })
  after(() => sandbox.close())

  /** Opens the login URL, picks `member`, and presses Allow or Deny: the callback it leads to. */
  async function signIn(
    protocol: UniversityProtocol,
    start: AttemptStart,
    decision: 'allow' | 'deny' = 'allow',
    member = 'ada',
  ): Promise<CallbackRequest> {
    const login = new URL(await protocol.authorizeUrl(start))
    const page = await fetch(login)
    assert.equal(page.status, 200)
    assert.match(
      await page.text(),
      /University sign-in \(sandbox\)[\s\S]*\(CAS\)[\s\S]*Ada Lovelace/,
    )
    const answer = await fetch(`${casUrl}/login/decision`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        service: login.searchParams.get('service')!,
        member,
        decision,
      }).toString(),
    })
    assert.equal(answer.status, 302)
    return callbackOf(answer.headers.get('location')!)
  }

  it('sends the browser to /login with the seed parameters and the exact service', async () => {
    const start = attempt('o+pen/Id=1&2')
    const login = new URL(await casProtocol(casUrl).authorizeUrl(start))
    assert.equal(`${login.origin}${login.pathname}`, `${casUrl}/login`)
    assert.deepEqual([...login.searchParams.keys()], ['client_id', 'state', 'service'])
    assert.equal(login.searchParams.get('client_id'), 'campusgate')
    assert.equal(login.searchParams.get('state'), 'o+pen/Id=1&2')
    // Encoded once: the service parameter decodes to the callback with the state encoded in it.
    assert.equal(
      login.searchParams.get('service'),
      `${CALLBACK}?state=${encodeURIComponent('o+pen/Id=1&2')}`,
    )
    assert.equal(login.searchParams.get('service'), serviceUrl(PUBLIC_BASE_URL, start.state))
  })

  it('CAS 3: validates the ticket and maps the attributes', async () => {
    const protocol = casProtocol(casUrl)
    const start = attempt()
    const callback = await signIn(protocol, start)
    assert.deepEqual(await protocol.read(callback), {
      kind: 'answer',
      state: start.state,
      cookie: 'cookie',
      denial: null,
    })
    assert.deepEqual(await protocol.complete(callback, start), {
      kind: 'linked',
      token: null,
      identity: {
        issuer: casUrl,
        subject: 'ALOVE01',
        email: 'ada.lovelace.24@sandbox-university.example',
        name: 'Ada Lovelace',
        isStudent: true,
      },
    })
  })

  it('CAS 2: /serviceValidate gives the user, and nothing is guessed', async () => {
    const protocol = casProtocol(casUrl, 2)
    const start = attempt()
    const callback = await signIn(protocol, start, 'allow', 'alan')
    assert.deepEqual(await protocol.complete(callback, start), {
      kind: 'linked',
      token: null,
      identity: { issuer: casUrl, subject: 'ATURI02' },
    })
  })

  it('UNIVERSITY_ATTRIBUTES picks other attributes', async () => {
    const protocol = createCasProtocol({
      casUrl,
      version: 3,
      publicBaseUrl: PUBLIC_BASE_URL,
      clientId: 'campusgate',
      attributes: readAttributes(
        {
          UNIVERSITY_ATTRIBUTES: 'subject=mail,name=givenName,isStudent=eduPersonAffiliation:staff',
        },
        'cas',
      )!,
      timeoutMs: 5000,
    })
    const start = attempt()
    const completion = await protocol.complete(await signIn(protocol, start), start)
    assert.deepEqual(completion, {
      kind: 'linked',
      token: null,
      identity: {
        issuer: casUrl,
        subject: 'ada.lovelace.24@sandbox-university.example',
        email: 'ada.lovelace.24@sandbox-university.example',
        name: 'Ada',
        isStudent: false,
      },
    })
  })

  it('Deny: the user comes back without a ticket, a denial', async () => {
    const protocol = casProtocol(casUrl)
    const start = attempt()
    const callback = await signIn(protocol, start, 'deny')
    assert.equal(callback.params.ticket, undefined)
    assert.deepEqual(await protocol.read(callback), {
      kind: 'answer',
      state: start.state,
      cookie: 'cookie',
      denial: { denied: true, reason: 'no ticket' },
    })
  })

  it('a ticket validates once: the second validation fails, and the reason never holds the ticket', async () => {
    const protocol = casProtocol(casUrl)
    const start = attempt()
    const callback = await signIn(protocol, start)
    assert.equal((await protocol.complete(callback, start)).kind, 'linked')
    const again = await protocol.complete(callback, start)
    assert.equal(again.kind, 'failed')
    assert.match(again.kind === 'failed' ? again.reason : '', /code=INVALID_TICKET/)
    assert.ok(!JSON.stringify(again).includes(callback.params.ticket!))
  })

  it('a ticket lives a minute', async () => {
    const protocol = casProtocol(casUrl)
    const start = attempt()
    const callback = await signIn(protocol, start)
    clock.advance(60_000)
    const late = await protocol.complete(callback, start)
    assert.equal(late.kind, 'failed')
    assert.match(late.kind === 'failed' ? late.reason : '', /code=INVALID_TICKET/)
  })

  it("a ticket issued for one user's service fails for another user's attempt", async () => {
    const protocol = casProtocol(casUrl)
    const callback = await signIn(protocol, attempt())
    const other = await protocol.complete(callback, attempt())
    assert.equal(other.kind, 'failed')
    assert.match(other.kind === 'failed' ? other.reason : '', /code=INVALID_SERVICE/)
  })

  it('refuses a POST, a missing state, a missing cookie and a malformed ticket before anything is read', async () => {
    const protocol = casProtocol(casUrl)
    const base = { attemptCookie: 'cookie', ip: '127.0.0.1' }
    assert.equal(
      (await protocol.read({ ...base, method: 'POST', params: { state: 's', ticket: 'ST-1' } }))
        .kind,
      'refuse',
    )
    assert.deepEqual(await protocol.read({ ...base, method: 'GET', params: { ticket: 'ST-1' } }), {
      kind: 'refuse',
      reason: 'state missing or malformed',
    })
    assert.deepEqual(
      await protocol.read({ ...base, method: 'GET', params: { state: 's', ticket: 'ST-1<x>' } }),
      { kind: 'refuse', reason: 'ticket malformed' },
    )
    assert.deepEqual(
      await protocol.read({
        ...base,
        attemptCookie: null,
        method: 'GET',
        params: { state: 's', ticket: 'ST-1' },
      }),
      { kind: 'refuse', reason: 'no attempt cookie' },
    )
  })
})

describe('CAS against a server that answers what it should not', () => {
  let server: Server
  let casUrl: string
  let answer: { status: number; body: string } = { status: 200, body: '' }
  const TICKET = 'ST-0123456789abcdef'
  before(async () => {
    server = createServer((_request, response) => {
      response.writeHead(answer.status, { 'content-type': 'application/xml' }).end(answer.body)
    })
    server.listen(0, '127.0.0.1')
    await once(server, 'listening')
    casUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/cas`
  })
  after(() => server.close())

  async function completeWith(status: number, body: string): Promise<string> {
    answer = { status, body }
    const start = attempt()
    const completion = await casProtocol(casUrl).complete(
      {
        method: 'GET',
        params: { state: start.state, ticket: TICKET },
        attemptCookie: 'c',
        ip: '::1',
      },
      start,
    )
    assert.equal(completion.kind, 'failed')
    const reason = completion.kind === 'failed' ? completion.reason : ''
    assert.ok(!reason.includes(TICKET), reason)
    return reason
  }

  const NS = 'xmlns:cas="http://www.yale.edu/tp/cas"'

  it('a failed validation names the server code, without the ticket it echoes', async () => {
    const reason = await completeWith(
      200,
      `<cas:serviceResponse ${NS}><cas:authenticationFailure code="INVALID_TICKET">Ticket ${TICKET} not recognized</cas:authenticationFailure></cas:serviceResponse>`,
    )
    assert.match(reason, /code=INVALID_TICKET/)
    assert.match(reason, /\[redacted\]/)
  })

  it('an answer without authenticationSuccess links nothing', async () => {
    const reason = await completeWith(
      200,
      `<cas:serviceResponse ${NS}><cas:proxySuccess><cas:proxyTicket>PT-1</cas:proxyTicket></cas:proxySuccess></cas:serviceResponse>`,
    )
    assert.match(reason, /no authenticationSuccess/)
  })

  it('an answer with a DTD is refused unread', async () => {
    const reason = await completeWith(
      200,
      `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY u "alice">]><cas:serviceResponse ${NS}><cas:authenticationSuccess><cas:user>&u;</cas:user></cas:authenticationSuccess></cas:serviceResponse>`,
    )
    assert.match(reason, /DTD|well-formed/)
  })

  it('a comment inside cas:user is refused', async () => {
    const reason = await completeWith(
      200,
      `<cas:serviceResponse ${NS}><cas:authenticationSuccess><cas:user>alice<!---->.evil</cas:user></cas:authenticationSuccess></cas:serviceResponse>`,
    )
    assert.match(reason, /holds a comment/)
  })

  it('an HTTP error, an answer that is not XML, and an answer too large', async () => {
    assert.match(await completeWith(503, 'down'), /HTTP 503/)
    assert.match(await completeWith(200, 'yes\nalice\n'), /not well-formed XML/)
    assert.match(await completeWith(200, 'x'.repeat(70_000)), /larger than 65536 bytes/)
  })

  it('a server that does not answer: the reason names the connection failure', async () => {
    const closed = createServer()
    closed.listen(0, '127.0.0.1')
    await once(closed, 'listening')
    const port = (closed.address() as AddressInfo).port
    closed.close()
    const start = attempt()
    const completion = await casProtocol(`http://127.0.0.1:${port}/cas`).complete(
      {
        method: 'GET',
        params: { state: start.state, ticket: TICKET },
        attemptCookie: 'c',
        ip: '::1',
      },
      start,
    )
    assert.deepEqual(completion, {
      kind: 'failed',
      reason: 'ticket validation failed: request failed: ECONNREFUSED',
    })
  })
})

describe('CAS against LemonLDAP::NG (Debian packages)', () => {
  let llng: LemonLdap
  before(async () => {
    llng = await startLemonLdap(PUBLIC_BASE_URL)
  })
  after(() => llng?.close())

  async function signIn(protocol: UniversityProtocol, start: AttemptStart, user = 'dwho') {
    const answer = await signInAt(new Browser(), await protocol.authorizeUrl(start), user)
    assert.equal(answer.status, 302, await answer.text())
    return callbackOf(answer.headers.get('location')!)
  }

  it('CAS 3: signs in by the portal form, validates the ticket, maps the attributes', async () => {
    const protocol = casProtocol(`${llng.url}/cas`)
    const start = attempt()
    const callback = await signIn(protocol, start)
    assert.equal(callback.params.state, start.state)
    assert.deepEqual(await protocol.read(callback), {
      kind: 'answer',
      state: start.state,
      cookie: 'cookie',
      denial: null,
    })
    assert.deepEqual(await protocol.complete(callback, start), {
      kind: 'linked',
      token: null,
      identity: {
        issuer: `${llng.url}/cas`,
        subject: 'dwho',
        email: 'dwho@badwolf.org',
        name: 'Doctor Who',
      },
    })
    // The server spends the ticket: a second validation fails.
    const again = await protocol.complete(callback, start)
    assert.equal(again.kind, 'failed')
    assert.match(again.kind === 'failed' ? again.reason : '', /code=INVALID_TICKET/)
  })

  it('CAS 2: /serviceValidate', async () => {
    const protocol = casProtocol(`${llng.url}/cas`, 2)
    const start = attempt()
    const completion = await protocol.complete(await signIn(protocol, start, 'rtyler'), start)
    assert.equal(completion.kind, 'linked')
    assert.equal(completion.kind === 'linked' ? completion.identity?.subject : '', 'rtyler')
  })

  it("a ticket fails for another user's service", async () => {
    const protocol = casProtocol(`${llng.url}/cas`)
    const callback = await signIn(protocol, attempt())
    const other = await protocol.complete(callback, attempt())
    assert.equal(other.kind, 'failed')
    assert.match(other.kind === 'failed' ? other.reason : '', /the CAS server refused the ticket/)
  })
})
