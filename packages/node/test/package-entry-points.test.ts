// The kit as an app's build sees it: its built entry points, resolved by TypeScript the way each
// moduleResolution in use does, and loaded by CommonJS require().
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { after, before, describe, it } from 'node:test'
import { startService, type RunningService } from '../../../test/helpers/service.js'
import { registerUser } from './apps.js'

const run = promisify(execFile)
const root = fileURLToPath(new URL('../../../', import.meta.url))
const tsc = join(root, 'node_modules/typescript/bin/tsc')

/**
 * Uses every entry point; wrong or missing types fail the compile, `any` fails the expect-errors.
 * `req.campusgate` (Express) and `request.campusgate` (Fastify) are one type, `Session | null`.
 */
const consumer = `
import { CampusgateConfigurationError, createClient, type Session, type WebhookEvent } from 'campusgate-node'
import { keepRawBody, requireTier as guardExpress, webhookHandler } from 'campusgate-node/express'
import { campusgatePlugin, requireTier as guardFastify } from 'campusgate-node/fastify'
import type { Request } from 'express'
import type { FastifyRequest } from 'fastify'

const client = createClient({
  baseUrl: 'http://127.0.0.1:3000',
  credentials: { id: 'forum', secret: 'forum-secret' },
  onError: (cause) => {
    const kind: 'unavailable' | 'configuration' = cause.kind
    return kind
  },
})
export const checked: Promise<Session | null> = client.session('key')
export const forExpress = [
  guardExpress(client, 'university-registered', {
    onRefused: (refusal, _req, res) => res.status(refusal.status).json({ why: refusal.error }),
  }),
  webhookHandler({
    secret: 'whsec_x',
    on: { 'user.erased': (event) => event.id + event.data.userId },
    onError: (refusal) => refusal.reason,
  }),
  keepRawBody,
]
export const forFastify = [
  guardFastify(client, 'messenger-registered', {
    onRefused: (refusal, _request, reply) => reply.code(refusal.status).send(refusal),
  }),
  campusgatePlugin,
]
export const isConfiguration = (error: unknown) => error instanceof CampusgateConfigurationError

type Equal<X, Y> = (<T>() => T extends X ? 1 : 2) extends <T>() => T extends Y ? 1 : 2 ? true : false
export const sameInBoth: Equal<Request['campusgate'], FastifyRequest['campusgate']> = true
export const sessionOrNull: Equal<Request['campusgate'], Session | null> = true
export const idOfEvent: Equal<WebhookEvent['id'], string> = true
// @ts-expect-error: a tier the kit does not know
guardExpress(client, 'admin')
`

interface Setup {
  name: string
  type: 'module' | 'commonjs'
  file: string
  compilerOptions: Record<string, unknown>
}

const SETUPS: Setup[] = [
  {
    name: 'node16',
    type: 'module',
    file: 'index.ts',
    compilerOptions: { module: 'node16', moduleResolution: 'node16' },
  },
  {
    name: 'nodenext',
    type: 'module',
    file: 'index.ts',
    compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext' },
  },
  {
    name: 'node16, a CommonJS app',
    type: 'commonjs',
    file: 'index.ts',
    compilerOptions: { module: 'node16', moduleResolution: 'node16' },
  },
  {
    name: 'nodenext, a CommonJS app',
    type: 'commonjs',
    file: 'index.ts',
    compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext' },
  },
  {
    name: 'nodenext, a .cts file',
    type: 'module',
    file: 'index.cts',
    compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext' },
  },
  {
    name: 'bundler',
    type: 'module',
    file: 'index.ts',
    compilerOptions: { module: 'esnext', moduleResolution: 'bundler' },
  },
  {
    name: 'node10',
    type: 'commonjs',
    file: 'index.ts',
    // TypeScript 6 deprecates node10 but still resolves with it; older apps use it.
    compilerOptions: { module: 'commonjs', moduleResolution: 'node10', ignoreDeprecations: '6.0' },
  },
]

/** A throwaway app directory that sees this repository's node_modules (the kit among them). */
async function appDirectory(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'campusgate-node-app-'))
  await symlink(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir')
  return dir
}

/** A TypeScript compile of the consumer: its errors, and the kit's declaration files it read. */
async function compileUnder(setup: Setup, checkLibraries: boolean) {
  const dir = await appDirectory()
  try {
    await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'app', type: setup.type }))
    await writeFile(join(dir, setup.file), consumer)
    await writeFile(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          ...setup.compilerOptions,
          target: 'es2022',
          strict: true,
          noEmit: true,
          types: ['node'],
          esModuleInterop: true,
          skipLibCheck: !checkLibraries,
        },
        files: [setup.file],
      }),
    )
    const args = [tsc, '-p', dir, '--listFiles', '--pretty', 'false']
    const output = await run(process.execPath, args).then(
      ({ stdout }) => stdout,
      (error: { stdout?: string; stderr?: string }) => `${error.stdout}${error.stderr}`,
    )
    const lines = output.split('\n').filter((line) => line !== '')
    return {
      errors: lines.filter((line) => /error TS\d+/.test(line)).join('\n'),
      kitFiles: lines.filter((line) => line.includes('/packages/node/dist/')).sort(),
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

describe('campusgate-node as an app installs it', () => {
  // Checking every declaration file (@types/node, Fastify's, ajv's: 56,000 lines) takes about 6 s
  // a compile. It is done once, under nodenext; each resolution then compiles the consumer with
  // skipLibCheck and must read the very same declaration files of the kit, so none of them
  // failed to resolve there and silently became `any`.
  const [full] = SETUPS.filter((setup) => setup.name === 'nodenext')
  let checked: Promise<Awaited<ReturnType<typeof compileUnder>>>
  before(() => {
    checked = compileUnder(full, true)
  })

  it(`its declarations and every library's check in full under moduleResolution ${full.name}`, async () => {
    const { errors, kitFiles } = await checked
    assert.equal(errors, '', `tsc under ${full.name}`)
    for (const entry of ['/index.d.ts', '/express.d.ts', '/fastify.d.ts'])
      assert.ok(
        kitFiles.some((file) => file.endsWith(entry)),
        `${entry} in ${kitFiles.join('\n')}`,
      )
  })

  for (const setup of SETUPS) {
    it(`its types resolve under moduleResolution ${setup.name}`, async () => {
      // The full compile's own resolution needs no second, lighter compile.
      const own = setup === full ? checked : compileUnder(setup, false)
      const [{ errors, kitFiles }, whole] = await Promise.all([own, checked])
      assert.equal(errors, '', `tsc under ${setup.name}`)
      assert.deepEqual(kitFiles, whole.kitFiles, `the kit's declarations read under ${setup.name}`)
    })
  }

  describe('required from CommonJS', () => {
    let service: RunningService
    before(async () => {
      service = await startService()
    })
    after(() => service.close())

    it('loads every entry point with require(), and its client checks a key', async () => {
      const { key, openId } = await registerUser(service)
      const dir = await appDirectory()
      try {
        await writeFile(
          join(dir, 'app.cjs'),
          `
const { createClient } = require('campusgate-node')
const forExpress = require('campusgate-node/express')
const forFastify = require('campusgate-node/fastify')
const client = createClient({ baseUrl: process.env.CAMPUSGATE_URL })
client.session(process.env.KEY).then(async (session) => {
  console.log(JSON.stringify({
    openId: session.openId,
    express: [typeof forExpress.requireTier, typeof forExpress.webhookHandler],
    fastify: [typeof forFastify.requireTier, typeof forFastify.campusgatePlugin],
  }))
  await client.close()
})
`,
        )
        const { stdout, stderr } = await run(process.execPath, [join(dir, 'app.cjs')], {
          cwd: dir,
          env: { ...process.env, CAMPUSGATE_URL: service.url, KEY: key },
        })
        assert.deepEqual(JSON.parse(stdout), {
          openId,
          express: ['function', 'function'],
          fastify: ['function', 'function'],
        })
        assert.equal(stderr, '', 'no warning either')

        // The same entry points imported by an ES module app, by name.
        await writeFile(
          join(dir, 'app.mjs'),
          `
import { createClient } from 'campusgate-node'
import { requireTier, webhookHandler } from 'campusgate-node/express'
import { campusgatePlugin } from 'campusgate-node/fastify'
const client = createClient({ baseUrl: process.env.CAMPUSGATE_URL })
const session = await client.session(process.env.KEY)
console.log(JSON.stringify([session.openId, typeof requireTier, typeof webhookHandler, typeof campusgatePlugin]))
await client.close()
`,
        )
        const imported = await run(process.execPath, [join(dir, 'app.mjs')], {
          cwd: dir,
          env: { ...process.env, CAMPUSGATE_URL: service.url, KEY: key },
        })
        assert.deepEqual(JSON.parse(imported.stdout), [openId, 'function', 'function', 'function'])
        assert.equal(imported.stderr, '')
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    })
  })
})
