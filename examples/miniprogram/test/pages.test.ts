// The example's pages, run as the mini-program runs them: `Page()` hands over each page's options,
// `wx` is the kit's test stand-in (real HTTP to a running campusgate in sandbox mode), and the
// test taps the buttons by calling the handlers the WXML binds.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { readFile } from 'node:fs/promises'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, beforeEach, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { freePort, startService, type RunningService } from '../../../test/helpers/service.js'
import { startSmtpSink, type SmtpSink } from '../../../test/helpers/smtp-sink.js'
import { createWx, type TestPlatform } from '../../../packages/miniprogram/test/platforms.js'
import { confirmByEmail } from '../../../packages/miniprogram/test/university.js'
import { createForum, type Forum } from '../../forum/src/forum.js'

type PageOptions = Record<string, unknown> & { data: Record<string, unknown> }
/** A page instance as the framework makes one: its options, its own data and setData. */
type PageInstance = Record<string, (...args: any[]) => any> & { data: Record<string, any> }

/** What the pages asked of `wx` beyond the kit's calls. */
interface Shown {
  toasts: string[]
  navigatedTo: string[]
  navigatedBack: number
  modals: string[]
}

const pages = new Map<string, PageOptions>()
let phone: TestPlatform
let shown: Shown
let confirmModal = true

// The globals a mini-program's code finds: `wx` is whichever phone the test is on.
const ui = {
  showToast: async (options: { title: string }) => void shown.toasts.push(options.title),
  navigateTo: async (options: { url: string }) => void shown.navigatedTo.push(options.url),
  navigateBack: async () => void (shown.navigatedBack += 1),
  showModal: async (options: { title: string }) => {
    shown.modals.push(options.title)
    return { confirm: confirmModal, cancel: !confirmModal }
  },
}
Object.assign(globalThis, {
  wx: new Proxy(
    {},
    {
      get: (_target, name: string) =>
        name in ui ? ui[name as keyof typeof ui] : (Reflect.get(phone, name) as unknown),
    },
  ),
  Page: (options: PageOptions) => pages.set(current, options),
})
let current = ''

async function load(path: string): Promise<void> {
  current = path
  await import(`../${path}.js`)
}

function open(path: string): PageInstance {
  const options = pages.get(path)
  assert.ok(options !== undefined, `${path} called Page()`)
  const page = { ...options, data: structuredClone(options.data) } as unknown as PageInstance
  page.setData = (patch: Record<string, unknown>) => void Object.assign(page.data, patch)
  for (const [name, value] of Object.entries(options)) {
    if (typeof value === 'function') page[name] = value.bind(page) as PageInstance[string]
  }
  return page
}

describe('the example mini-program against the running campusgate and forum', () => {
  let service: RunningService
  let smtp: SmtpSink
  let forum: Forum
  let forumServer: Server
  let forumUrl: string
  let users = 0

  before(async () => {
    smtp = await startSmtpSink()
    // The forum of examples/forum, guarded by campusgate-node, as docs/building-the-app.md has it.
    const port = await freePort()
    const backend = { id: 'forum', secret: randomBytes(24).toString('base64url') }
    const webhookSecret = `whsec_${randomBytes(32).toString('base64')}`
    forum = createForum({
      campusgateUrl: `http://127.0.0.1:${port}`,
      credentials: backend,
      webhookSecret,
      log: () => undefined,
    })
    forumServer = forum.app.listen(0, '127.0.0.1')
    await once(forumServer, 'listening')
    forumUrl = `http://127.0.0.1:${(forumServer.address() as AddressInfo).port}`
    service = await startService({
      PORT: String(port),
      SMTP_URL: smtp.url,
      BACKEND_CREDENTIALS: `${backend.id}:${backend.secret}`,
      WEBHOOK_URL: `${forumUrl}/campusgate/events`,
      WEBHOOK_SECRET: webhookSecret,
    })
    // The example's config names npm start's addresses; the test's listen elsewhere.
    const { config } = await import('../config.js')
    config.baseUrl = service.url
    config.forumUrl = forumUrl
    await load('pages/index/index')
    await load('pages/university/university')
    await load('pages/forum/forum')
  })
  after(async () => {
    await service.close()
    await new Promise((resolve) => forumServer.close(resolve))
    await forum.close()
    await smtp.stop()
  })

  /** A new user on a new phone. */
  beforeEach(() => {
    users += 1
    phone = createWx(`${service.url}/_sandbox/messenger`, `unused-${users}`)
    shown = { toasts: [], navigatedTo: [], navigatedBack: 0, modals: [] }
    confirmModal = true
  })

  const paths = (): string[] =>
    phone.sent.map((sent) => `${sent.method} ${new URL(sent.url).pathname}`)
  const openId = (): string => phone.storage.get('campusgate.sandboxOpenId') as string

  it('has a handler for every event its WXML binds', async () => {
    for (const path of ['pages/index/index', 'pages/university/university', 'pages/forum/forum']) {
      const wxml = await readFile(new URL(`../${path}.wxml`, import.meta.url), 'utf8')
      for (const [, handler] of wxml.matchAll(/\bbind\w+="(\w+)"/g)) {
        assert.equal(typeof pages.get(path)?.[handler], 'function', `${path}: ${handler}`)
      }
    }
  })

  it('signs in on show with a sandbox code and no AppSecret, and shows tier 1', async () => {
    const index = open('pages/index/index')
    await index.onShow()
    assert.equal(index.data.message, '')
    assert.equal(index.data.tier, 'messenger-registered')
    assert.equal(index.data.openId, openId())
    assert.deepEqual(paths(), [
      'POST /_sandbox/messenger/login-codes',
      'POST /register/messenger',
      'GET /session',
    ])
    const registration = JSON.parse(phone.sent[1].body!)
    assert.equal(registration.appId, 'wx-sandbox-app')
    assert.equal(registration.appSecret, 'server-held')
    assert.equal(smtp.messages.length, 0, 'showing the page mails nothing')

    // Shown again: the kept key, no new sign-in.
    await index.onShow()
    assert.deepEqual(paths().slice(3), ['GET /session'])
  })

  it('mails the link once on the tap, and shows tier 2 once the user confirmed it', async () => {
    const index = open('pages/index/index')
    await index.onShow()
    const email = `${openId()}@example.edu`
    const mailsBefore = smtp.messages.length
    index.onEmailInput({ detail: { value: email } })
    const asked = index.askConfirmation()
    await confirmByEmail(service, smtp, openId(), email)
    await asked
    assert.equal(index.data.tier, 'university-registered')
    assert.equal(index.data.message, 'University email confirmed.')
    assert.equal(smtp.messages.length, mailsBefore + 1, 'one tap, one email')

    const university = open('pages/university/university')
    await university.onLoad()
    assert.equal(typeof university.data.name, 'string')
    assert.notEqual(university.data.name, '')
    assert.equal(shown.navigatedBack, 0)
  })

  it('stops polling when hidden, and takes the wait up again on show', async () => {
    const index = open('pages/index/index')
    await index.onShow()
    const email = `${openId()}@example.edu`
    index.onEmailInput({ detail: { value: email } })
    const asked = index.askConfirmation()
    await sleep(300)
    index.onHide()
    await asked
    assert.equal(index.data.emailSent, true)
    const polls = paths().length
    await sleep(2_300)
    assert.equal(paths().length, polls, 'nothing is sent while the page is hidden')

    await confirmByEmail(service, smtp, openId(), email)
    await index.onShow()
    assert.equal(index.data.tier, 'university-registered')
    assert.equal(index.data.emailSent, false)
  })

  it('sends tier 1 back from the university page', async () => {
    const university = open('pages/university/university')
    await university.onLoad()
    assert.equal(university.data.name, '')
    assert.deepEqual(shown.toasts, ['Confirm your university email first'])
    assert.equal(shown.navigatedBack, 1)
  })

  /** Calls `step` until `done()` holds, for up to five seconds (an event on its way to the forum). */
  async function until(step: () => Promise<void>, done: () => boolean): Promise<void> {
    const deadline = Date.now() + 5_000
    await step()
    while (!done() && Date.now() < deadline) {
      await sleep(100)
      await step()
    }
  }

  it('posts on the forum through the kit, and opens the campus board at tier 2', async () => {
    const index = open('pages/index/index')
    await index.onShow()
    const board = open('pages/forum/forum')
    board.onLoad()
    await board.onShow()
    assert.equal(board.data.message, '')
    assert.equal(board.data.campusOpen, false, 'tier 1: the campus board is closed')
    board.onTextInput({ detail: { value: 'hello from the example' } })
    await board.post()
    assert.equal(board.data.message, 'Posted.')
    const posts = board.data.posts as { author: string; text: string }[]
    const mine = posts.find((post) => post.author === openId())
    assert.equal(mine?.text, 'hello from the example')
    // The forum got the key campusgate issued, and nothing else did.
    const key = phone.storage.get('campusgate.sessionKey')
    const withKey = phone.sent.filter((sent) => sent.header.Authorization === key)
    assert.ok(withKey.some((sent) => sent.url.startsWith(forumUrl)))
    assert.ok(
      withKey.every((sent) => sent.url.startsWith(forumUrl) || sent.url.startsWith(service.url)),
    )
    assert.equal(
      paths().filter((path) => path === 'POST /register/messenger').length,
      1,
      'the forum took the key campusgate issued: no second sign-in',
    )

    const email = `${openId()}@example.edu`
    index.onEmailInput({ detail: { value: email } })
    const asked = index.askConfirmation()
    await confirmByEmail(service, smtp, openId(), email)
    await asked
    // university.linked reaches the forum, which forgets what it believed of the key.
    await until(
      () => board.onShow() as Promise<void>,
      () => board.data.campusOpen === true,
    )
    assert.equal(board.data.campusOpen, true)
    board.onTextInput({ detail: { value: 'for members' } })
    await board.postToCampus()
    assert.equal(board.data.campusPosts[0]?.text, 'for members')
    board.onUnload()
  })

  it('tells the user when a refused key made the kit sign in again', async () => {
    const board = open('pages/forum/forum')
    board.onLoad()
    await board.onShow()
    const key = phone.storage.get('campusgate.sessionKey') as string
    // Signed out elsewhere (the user's own curl, another page of a web app).
    const ended = await fetch(`${service.url}/logout`, {
      method: 'POST',
      headers: { authorization: key },
    })
    assert.equal(ended.status, 200)
    await until(
      () => board.refresh() as Promise<void>,
      () => board.data.message !== '',
    )
    assert.match(board.data.message, /signed out and has signed in again \(messenger-registered\)/)
    assert.notEqual(phone.storage.get('campusgate.sessionKey'), key)
    board.onUnload()
  })

  it('signs out and erases through the buttons', async () => {
    const index = open('pages/index/index')
    await index.onShow()
    const key = phone.storage.get('campusgate.sessionKey') as string
    await index.logout()
    assert.equal(index.data.message, 'Signed out.')
    assert.equal(phone.storage.has('campusgate.sessionKey'), false)
    const ended = await fetch(`${service.url}/session`, { headers: { authorization: key } })
    assert.equal(ended.status, 401)

    await index.onShow()
    confirmModal = false
    await index.erase()
    assert.equal(index.data.tier, 'messenger-registered', 'cancelled: nothing happens')
    confirmModal = true
    await index.erase()
    assert.equal(index.data.message, 'Erased.')
    assert.deepEqual(shown.modals, ['Erase your account?', 'Erase your account?'])
    const row = await service.db.kysely
      .selectFrom('identities')
      .select('user_id')
      .where('subject', '=', openId())
      .executeTakeFirst()
    assert.equal(row, undefined)
  })
})
