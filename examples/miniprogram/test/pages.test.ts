// The example's pages, run as the mini-program runs them: `Page()` hands over each page's options,
// `wx` is the kit's test stand-in (real HTTP to a running campusgate in sandbox mode), and the
// test taps the buttons by calling the handlers the WXML binds.
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { after, before, beforeEach, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { startService, type RunningService } from '../../../test/helpers/service.js'
import { startSmtpSink, type SmtpSink } from '../../../test/helpers/smtp-sink.js'
import { createWx, type TestPlatform } from '../../../packages/miniprogram/test/platforms.js'
import { confirmByEmail } from '../../../packages/miniprogram/test/university.js'

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

describe('the example mini-program against the running campusgate', () => {
  let service: RunningService
  let smtp: SmtpSink
  let users = 0

  before(async () => {
    smtp = await startSmtpSink()
    service = await startService({ SMTP_URL: smtp.url })
    // The example's config names npm start's address; the test's campusgate listens elsewhere.
    const { config } = await import('../config.js')
    config.baseUrl = service.url
    await load('pages/index/index')
    await load('pages/university/university')
  })
  after(async () => {
    await service.close()
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
    for (const path of ['pages/index/index', 'pages/university/university']) {
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
      .selectFrom('users')
      .select('id')
      .where('open_id', '=', openId())
      .executeTakeFirst()
    assert.equal(row, undefined)
  })
})
