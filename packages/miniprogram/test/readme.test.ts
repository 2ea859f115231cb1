// Every code block of the kit's README compiles as a mini-program compiles it, and the example page
// runs as written: hidden while it waits for tier 2, it leaves no unhandled rejection (issue 47).
import assert from 'node:assert/strict'
import { readFile, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { SANDBOX_APP } from '../../../src/sandbox/routes.js'
import { compileSnippets, snippetsOf } from '../../../test/helpers/readme-snippets.js'
import { startService, type RunningService } from '../../../test/helpers/service.js'
import { createWx } from './platforms.js'

const README = fileURLToPath(new URL('../README.md', import.meta.url))

/** As the developer tools compile a mini-program: CommonJS, ES2017, the platform's typings. */
const MINI_PROGRAM = {
  type: 'commonjs',
  compilerOptions: {
    module: 'node16',
    moduleResolution: 'node16',
    target: 'es2017',
    lib: ['es2017'],
    types: ['miniprogram-api-typings'],
  },
} as const

/** A page's options as Page() takes them: its data, and handlers called with the page as `this`. */
type PageOptions = Record<string, (this: PageOptions, ...args: any[]) => any> & {
  data: Record<string, any>
}

describe("campusgate-miniprogram's README", () => {
  let service: RunningService

  before(async () => {
    service = await startService()
  })
  after(() => service.close())

  it('has code blocks that all compile under strict TypeScript with the platform typings', async () => {
    const snippets = (await snippetsOf(README)).filter((snippet) => snippet.lang === 'ts')
    assert.ok(snippets.length >= 3, `${snippets.length} code blocks`)
    const compiled = await compileSnippets(snippets, MINI_PROGRAM)
    try {
      assert.equal(compiled.problems, '')
    } finally {
      await compiled.cleanup()
    }
  })

  it('has an example page that, hidden while it waits for tier 2, leaves no unhandled rejection', async () => {
    const page = (await snippetsOf(README)).find((snippet) => snippet.code.includes('Page({'))
    assert.ok(page !== undefined, 'the example page')
    const compiled = await compileSnippets([page], MINI_PROGRAM, 'out')
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    try {
      assert.equal(compiled.problems, '')
      // The README's own code, pointed at this test's campusgate and its sandbox app.
      const file = join(compiled.dir, 'out', compiled.files[0].replace(/\.ts$/, '.js'))
      const code = await readFile(file, 'utf8')
      await writeFile(
        file,
        code
          .replace("'https://campusgate.example.edu'", JSON.stringify(service.url))
          .replace("'wx0123456789abcdef'", JSON.stringify(SANDBOX_APP.appId)),
      )
      const phone = createWx(`${service.url}/_sandbox/messenger`, `readme-${process.pid}`)
      let options: PageOptions | null = null
      Object.assign(globalThis, { wx: phone, Page: (given: PageOptions) => (options = given) })
      createRequire(import.meta.url)(file)
      assert.ok(options !== null, 'the example called Page()')
      const instance = {
        ...(options as PageOptions),
        data: { ...(options as PageOptions).data },
      } as unknown as PageOptions
      instance.setData = (patch: Record<string, unknown>) => Object.assign(instance.data, patch)

      // Shown: signs in and shows tier 1.
      await instance.onShow.call(instance)
      assert.equal(instance.data.tier, 'messenger-registered')
      assert.equal(instance.data.message, '')

      // The email was sent; shown again, it waits for tier 2, and the user leaves for the mail app.
      instance.data.emailSent = true
      const shown: Promise<void> = instance.onShow.call(instance)
      await sleep(300)
      instance.onHide.call(instance)
      await shown
      await sleep(50)
      assert.deepEqual(unhandled, [])
      assert.equal(instance.data.message, '', 'an abort is not an error to show')
      const polls = phone.sent.length
      await sleep(2_300)
      assert.equal(phone.sent.length, polls, 'nothing polls while hidden')
    } finally {
      process.off('unhandledRejection', onUnhandled)
      await compiled.cleanup()
    }
  })
})
