import assert from 'node:assert/strict'
import { spawn, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { after, before, describe, it } from 'node:test'
import { hashSecret } from '../../src/lib/secrets.js'
import { buildDist } from '../helpers/process.js'
import { call } from '../helpers/service.js'
import {
  registerMessenger,
  registerUniversity,
  sessionOf,
  startStack,
  type Stack,
} from '../helpers/stack.js'

const BIN = resolve('bin/campusgate.js')

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs the installed command (bin/campusgate.js over dist/) with only `env`. */
function campusgate(env: Record<string, string>, ...args: string[]): Run {
  const run = spawnSync(process.execPath, [BIN, ...args], {
    env: { PATH: process.env.PATH, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  })
  return { code: run.status, stdout: run.stdout, stderr: run.stderr }
}

const COMMANDS = [
  'serve',
  'migrate',
  'prune',
  'backup',
  'restore',
  'sessions list',
  'sessions revoke',
  'users show',
  'users erase',
  'users suspend',
  'users restore',
  'outbox list',
  'outbox retry',
  'audit tail',
  'events list',
  'events retry',
  'events replay',
  'console link',
  'console revoke',
  'import-original',
]

describe('the campusgate command', () => {
  let stack: Stack
  let env: Record<string, string>

  before(async () => {
    // The binary runs the build, as an installed package does.
    buildDist()
    stack = await startStack()
    // The command runs on the real clock: the service's clock is brought to it, so both write
    // one timeline (the audit trail is read in time order).
    stack.service.clock.advance(Date.now() - stack.service.clock.now().getTime())
    env = { DATABASE_URL: stack.service.config.database.url, LOG_LEVEL: 'warn' }
  })
  after(() => stack.close())

  it("is the package's bin; npm start still serves dist/main.js", () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8'))
    assert.deepEqual(pkg.bin, { campusgate: 'bin/campusgate.js' })
    assert.equal(pkg.scripts.start, 'node dist/main.js')
  })

  it('prints help for itself and for every command, and exits 0', () => {
    const overview = campusgate(env)
    assert.equal(overview.code, 0)
    for (const name of COMMANDS) assert.match(overview.stdout, new RegExp(`^  ${name} `, 'm'))
    assert.match(overview.stdout, /Exit codes: 0 done, 1 failed, 2 wrong command line, 3 not found/)
    for (const name of COMMANDS) {
      const help = campusgate(env, ...name.split(' '), '--help')
      assert.equal(help.code, 0, name)
      assert.match(help.stdout, new RegExp(`^campusgate ${name} — `), name)
      assert.match(help.stdout, /^Usage:$/m, name)
    }
  })

  it('answers help and usage errors without loading the database drivers, Fastify or the services', () => {
    // What a command line loads (docs/operations.md): CommonJS packages are in require's cache.
    const main = JSON.stringify(pathToFileURL(resolve('dist/main.js')).href)
    const loadedBy = (args: string[]): string[] => {
      const script = [
        "import { createRequire } from 'node:module'",
        `const { main } = await import(${main})`,
        `await main(${JSON.stringify(args)}, process.env, 'help')`,
        'const loaded = Object.keys(createRequire(import.meta.url).cache)',
        "process.stderr.write('\\nloaded: ' + JSON.stringify(loaded) + '\\n')",
      ].join('\n')
      const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
        env: { PATH: process.env.PATH, ...env },
        encoding: 'utf8',
        timeout: 60_000,
      })
      const loaded = /^loaded: (.*)$/m.exec(run.stderr)?.[1]
      assert.ok(loaded !== undefined, run.stderr)
      return (JSON.parse(loaded) as string[]).filter((path) =>
        /node_modules\/(pg|better-sqlite3|fastify|nodemailer|ioredis)\//.test(path),
      )
    }
    for (const args of [[], ['users', 'show', '--help'], ['users'], ['frobnicate']]) {
      assert.deepEqual(loadedBy(args), [], args.join(' '))
    }
    // A command that runs loads them.
    assert.notDeepEqual(loadedBy(['migrate', '--check']), [])
  })

  it('prints the usage of every group of subcommands for --help (exit 0), and with it when the subcommand is missing (exit 2)', () => {
    const groups = [...new Set(COMMANDS.filter((c) => c.includes(' ')).map((c) => c.split(' ')[0]))]
    assert.deepEqual(groups, ['sessions', 'users', 'outbox', 'audit', 'events', 'console'])
    for (const group of groups) {
      const members = COMMANDS.filter((c) => c.startsWith(`${group} `))
      for (const flag of ['--help', '-h']) {
        const help = campusgate(env, group, flag)
        assert.equal(help.code, 0, `${group} ${flag}: ${help.stderr}`)
        assert.match(help.stdout, /^Usage:$/m, group)
        for (const member of members)
          assert.match(help.stdout, new RegExp(`^  campusgate ${member}\\b`, 'm'), member)
      }
      const missing = campusgate(env, group)
      assert.equal(missing.code, 2, group)
      assert.equal(missing.stdout, '')
      assert.match(missing.stderr, new RegExp(`^campusgate: ${group} needs one of: `), group)
      assert.match(missing.stderr, /^Usage:$/m, group)
      for (const member of members)
        assert.match(missing.stderr, new RegExp(`^  campusgate ${member}\\b`, 'm'), member)
      const unknown = campusgate(env, group, 'frobnicate')
      assert.equal(unknown.code, 2, group)
      assert.match(unknown.stderr, /^Usage:$/m, group)
    }
  })

  it('exits 2 on a wrong command line, 1 on a bad configuration, 3 for an unknown user', () => {
    assert.equal(campusgate(env, 'frobnicate').code, 2)
    assert.equal(campusgate(env, 'users').code, 2)
    assert.equal(campusgate(env, 'events', 'retry').code, 2)
    assert.equal(campusgate(env, 'events', 'list', '--state', 'lost').code, 2)
    const missing = campusgate(env, 'users', 'show')
    assert.equal(missing.code, 2)
    assert.match(
      missing.stderr,
      /the openId is required: after the command or as --open-id <openId>/,
    )
    assert.equal(campusgate(env, 'users', 'show', '--open-id', 'x', '--bogus').code, 2)
    const bad = campusgate({ ...env, SESSION_TTL: 'forever' }, 'migrate')
    assert.equal(bad.code, 1)
    assert.match(bad.stderr, /^campusgate: invalid configuration: SESSION_TTL: /)
    const unknown = campusgate(env, 'users', 'show', '--open-id', 'nobody')
    assert.equal(unknown.code, 3)
    assert.match(unknown.stderr, /no user with openId "nobody"/)
  })

  it('migrate and prune run against the database', () => {
    const migrate = campusgate(env, 'migrate')
    assert.equal(migrate.code, 0, migrate.stderr)
    assert.equal(migrate.stdout, 'schema is up to date\n')
    assert.equal(campusgate(env, 'migrate', '--check').code, 0)
    const prune = campusgate(env, 'prune')
    assert.equal(prune.code, 0, prune.stderr)
    assert.match(prune.stdout, /^ended \d+ expired session\(s\); deleted /)
  })

  it('users show tells what is held about a user, no secret or hash', async () => {
    const user = await registerMessenger(stack)
    const shown = campusgate(env, 'users', 'show', '--open-id', user.openId)
    assert.equal(shown.code, 0, shown.stderr)
    assert.match(shown.stdout, new RegExp(`^openId +${user.openId}$`, 'm'))
    assert.match(shown.stdout, /^tier +messenger-registered$/m)
    assert.ok(!shown.stdout.includes(user.sessionKey))
    assert.ok(!shown.stdout.includes(hashSecret(user.sessionKey)))
    assert.doesNotMatch(shown.stdout, /[0-9a-f]{64}/, 'no hash')
    const json = JSON.parse(
      campusgate(env, 'users', 'show', '--open-id', user.openId, '--json').stdout,
    )
    assert.equal(json.openId, user.openId)
    assert.equal(json.tier, 'messenger-registered')
  })

  it('users show tells the tier GET /session answers: a link older than UNIVERSITY_LINK_MAX_AGE has lapsed', async () => {
    const hour = 3_600_000
    // Linked an hour ago on the service's clock, which then comes back to now.
    stack.service.clock.advance(-hour)
    const user = await registerUniversity(stack)
    stack.service.clock.advance(hour)
    assert.equal((await sessionOf(stack, user.sessionKey)).body.tier, 'university-registered')
    const tierOf = (extra: Record<string, string>): unknown =>
      JSON.parse(
        campusgate({ ...env, ...extra }, 'users', 'show', '--open-id', user.openId, '--json')
          .stdout,
      ).tier
    assert.equal(tierOf({}), 'university-registered')
    assert.equal(tierOf({ UNIVERSITY_LINK_MAX_AGE: '2h' }), 'university-registered')
    assert.equal(tierOf({ UNIVERSITY_LINK_MAX_AGE: '30m' }), 'messenger-registered')
  })

  it('sessions revoke ends the session as logout does; a second revoke exits 3', async () => {
    const user = await registerMessenger(stack)
    const revoked = campusgate(env, 'sessions', 'revoke', user.openId)
    assert.equal(revoked.code, 0, revoked.stderr)
    const session = await call(`${stack.service.url}/session`, {
      headers: { authorization: user.sessionKey },
    })
    assert.equal(session.status, 401)
    assert.equal(campusgate(env, 'sessions', 'revoke', user.openId).code, 3)
    assert.equal(campusgate(env, 'sessions', 'revoke', 'nobody-at-all', '--all').code, 3)
    const shown = campusgate(env, 'users', 'show', '--open-id', user.openId)
    assert.match(shown.stdout, /^tier +none/m, 'the user row stays')
  })

  it('sessions list shows each device; sessions revoke ends one by --session, all by --all, and asks which with several', async () => {
    const phone = await registerMessenger(stack, undefined, 'Phone/1.0')
    const desktop = await registerMessenger(stack, phone.openId, 'Desktop/2.0')
    const listed = JSON.parse(
      campusgate(env, 'sessions', 'list', phone.openId, '--json').stdout,
    ) as { id: string; device: string }[]
    assert.deepEqual(listed.map((one) => one.device).sort(), ['Desktop/2.0', 'Phone/1.0'])
    const lines = campusgate(env, 'sessions', 'list', phone.openId)
    assert.equal(lines.code, 0, lines.stderr)
    assert.equal(lines.stdout.trim().split('\n').length, 2)
    for (const key of [phone.sessionKey, desktop.sessionKey]) {
      assert.ok(!lines.stdout.includes(key) && !lines.stdout.includes(hashSecret(key)))
    }

    // Several sessions and no flag: nothing ends, and the operator is told how to choose.
    const unsure = campusgate(env, 'sessions', 'revoke', phone.openId)
    assert.equal(unsure.code, 2)
    assert.match(unsure.stderr, /2 live sessions.*--session ID.*--all/)
    assert.equal(
      campusgate(env, 'sessions', 'revoke', phone.openId, '--all', '--session', 'x').code,
      2,
    )

    const desktopId = listed.find((one) => one.device === 'Desktop/2.0')!.id
    const one = campusgate(env, 'sessions', 'revoke', phone.openId, '--session', desktopId)
    assert.equal(one.code, 0, one.stderr)
    const statusOf = async (key: string) =>
      (await call(`${stack.service.url}/session`, { headers: { authorization: key } })).status
    assert.equal(await statusOf(desktop.sessionKey), 401)
    assert.equal(await statusOf(phone.sessionKey), 200)
    assert.equal(
      campusgate(env, 'sessions', 'revoke', phone.openId, '--session', desktopId).code,
      3,
    )

    await registerMessenger(stack, phone.openId)
    const all = campusgate(env, 'sessions', 'revoke', phone.openId, '--all')
    assert.equal(all.code, 0, all.stderr)
    assert.match(all.stdout, /revoked 2 sessions/)
    assert.equal(await statusOf(phone.sessionKey), 401)
    assert.match(campusgate(env, 'sessions', 'list', phone.openId).stdout, /no live session/)
    assert.equal(campusgate(env, 'sessions', 'list', 'nobody-at-all').code, 3)
  })

  it('every command that names a user takes its openId after the command or as --open-id', async () => {
    const user = await registerMessenger(stack, undefined, 'Phone/1.0')
    for (const command of [
      ['users', 'show', '--json'],
      ['users', 'export'],
      ['sessions', 'list', '--json'],
    ]) {
      const after = campusgate(env, ...command, user.openId)
      const option = campusgate(env, ...command, '--open-id', user.openId)
      const both = campusgate(env, ...command, user.openId, '--open-id', user.openId)
      assert.equal(after.code, 0, after.stderr)
      assert.equal(option.code, 0, option.stderr)
      assert.equal(both.code, 0, both.stderr)
      // The same user either way (an export also lists the export before it, so only its user).
      const userOf = (run: Run): unknown => {
        const value = JSON.parse(run.stdout) as Record<string, unknown>
        return command[1] === 'export' ? value.user : value
      }
      assert.deepEqual(userOf(option), userOf(after), command.join(' '))
      if (command[0] === 'sessions') assert.equal((userOf(after) as unknown[]).length, 1)
      else assert.ok(after.stdout.includes(user.openId))
      const twoUsers = campusgate(env, ...command, user.openId, '--open-id', 'someone-else')
      assert.equal(twoUsers.code, 2, command.join(' '))
      assert.match(twoUsers.stderr, /two openIds given/)
      assert.equal(campusgate(env, ...command).code, 2, command.join(' '))
      assert.equal(campusgate(env, ...command, '--open-id', 'nobody-at-all').code, 3)
      assert.match(campusgate(env, command[0], command[1], '--help').stdout, /--open-id <open-id>/)
    }

    const revoked = campusgate(env, 'sessions', 'revoke', '--open-id', user.openId)
    assert.equal(revoked.code, 0, revoked.stderr)
    assert.match(revoked.stdout, /revoked 1 session of/)
    const erased = campusgate(env, 'users', 'erase', user.openId)
    assert.equal(erased.code, 0, erased.stderr)
    assert.equal(campusgate(env, 'users', 'show', user.openId).code, 3)
  })

  it('users erase forgets the user as DELETE /user does', async () => {
    const user = await registerMessenger(stack)
    const erased = campusgate(env, 'users', 'erase', '--open-id', user.openId)
    assert.equal(erased.code, 0, erased.stderr)
    const session = await call(`${stack.service.url}/session`, {
      headers: { authorization: user.sessionKey },
    })
    assert.equal(session.status, 401)
    assert.equal(campusgate(env, 'users', 'show', '--open-id', user.openId).code, 3)
    assert.equal(campusgate(env, 'users', 'erase', '--open-id', user.openId).code, 3)
  })

  it('outbox list shows queued mail (address masked, no link); outbox retry makes it due', async () => {
    await stack.service.mailWorker.stop()
    try {
      const user = await registerMessenger(stack)
      const queued = await call(`${stack.service.url}/register/university`, {
        method: 'POST',
        headers: { authorization: user.sessionKey },
        json: { email: 'queued.student@example.edu' },
      })
      assert.equal(queued.status, 200)
      const list = campusgate(env, 'outbox', 'list', '--json')
      assert.equal(list.code, 0, list.stderr)
      const rows = list.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>)
      assert.equal(rows.length, 1)
      assert.equal(rows[0].state, 'queued')
      assert.equal(rows[0].to, 'q***@example.edu')
      assert.doesNotMatch(list.stdout, /universityRegistrationCode/)
      const retry = campusgate(env, 'outbox', 'retry')
      assert.equal(retry.code, 0, retry.stderr)
      assert.equal(retry.stdout, '1 queued mail(s) due now\n')
      assert.equal(campusgate(env, 'outbox', 'retry', '--id', 'no-such-mail').code, 3)
    } finally {
      stack.service.mailWorker.start()
    }
  })

  it('audit tail shows who did what, the CLI included; --follow prints new events until interrupted', async () => {
    const tail = campusgate(env, 'audit', 'tail', '--limit', '200')
    assert.equal(tail.code, 0, tail.stderr)
    assert.match(tail.stdout, /erasure +cli:\S+ +openId=/)
    assert.match(tail.stdout, /logout +cli:\S+ +openId=/)
    assert.match(tail.stdout, /registration +api +openId=\S+ +from 127\.0\.0\.1/)

    const follower = spawn(process.execPath, [BIN, 'audit', 'tail', '--follow', '--limit', '1'], {
      env: { PATH: process.env.PATH, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    follower.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    const exited = new Promise<number | null>((done) => follower.once('exit', done))
    try {
      for (let i = 0; i < 200 && output === ''; i += 1) await new Promise((r) => setTimeout(r, 50))
      // The service's clock stood still while the command's ran on: catch up, then act.
      stack.service.clock.advance(Date.now() + 1000 - stack.service.clock.now().getTime())
      const user = await registerMessenger(stack)
      for (let i = 0; i < 200 && !output.includes(user.openId); i += 1)
        await new Promise((r) => setTimeout(r, 50))
      assert.match(output, new RegExp(`registration +api +openId=${user.openId}`))
    } finally {
      follower.kill('SIGINT')
    }
    assert.equal(await exited, 0)
  })
})
