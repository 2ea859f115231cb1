import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { parseRaw } from '../helpers/raw-http.js'
import { call, freePort, MEDIA_TYPE } from '../helpers/service.js'
import { followCallback, openLink } from '../helpers/stack.js'
import {
  answersOk,
  composeCommand,
  docker,
  dockerUnavailable,
  historyBytes,
  imageId,
  inspect,
  run,
  waitFor,
  type Output,
} from '../helpers/docker.js'

/**
 * The image and compose.yaml of docs/deployment.md, built and run here: the image from the
 * Dockerfile (on stand-ins of the official base images where no registry can be reached:
 * scripts/container-stand-ins.sh), one container of it walking the README's sandbox flow on a
 * read-only root file system, and the compose stack of two instances on PostgreSQL and Redis.
 * Everything runs on the host's network (a machine may have no bridge network), each service on
 * a free port. Containers, volumes and networks made here are removed; the images stay, so the
 * next run builds from the cache.
 */

const BASE = 'node:22-bookworm-slim'
const IMAGE = 'campusgate:test'
const BUILD_STAGE = 'campusgate:test-build'
const ROOT = resolve('.')
const RUN_ID = randomBytes(4).toString('hex')
const MINUTE = 60_000

const unavailable = dockerUnavailable()
// In CI the containers are part of the run: no daemon is a failure there, not a reason to skip.
const skip = unavailable !== null && process.env.CI !== 'true' ? unavailable : false

describe('the container image and compose.yaml', { skip }, () => {
  /** The stand-ins of postgres and redis, made while the image builds; an error, or null. */
  let serviceImages: Promise<Error | null> = Promise.resolve(null)
  let volumesBefore = new Set<string>()

  before(
    async () => {
      assert.equal(unavailable, null, unavailable ?? '')
      volumesBefore = await volumeNames()
      // Only what is missing is made: a present image of each tag is used as it is.
      await run('bash', ['scripts/container-stand-ins.sh', 'node'], { timeoutMs: 10 * MINUTE })
      serviceImages = run('bash', ['scripts/container-stand-ins.sh', 'postgres', 'redis'], {
        timeoutMs: 10 * MINUTE,
      }).then(
        () => null,
        (error: Error) => error,
      )
      await buildImage()
    },
    { timeout: 30 * MINUTE },
  )

  after(async () => {
    await serviceImages
    // Named or anonymous, no volume made here outlives the run; nor any container.
    const volumes = await volumeNames()
    assert.deepEqual(
      [...volumes].filter((name) => !volumesBefore.has(name)),
      [],
    )
    const { stdout } = await docker(['ps', '--all', '--quiet', '--filter', `name=${RUN_ID}`])
    assert.equal(stdout.trim(), '')
  })

  it('is built in stages, at most 100 MB above its base by docker history', async (t) => {
    const added = (await historyBytes(IMAGE)) - (await historyBytes(BASE))
    t.diagnostic(`${(added / 1e6).toFixed(1)} MB above ${BASE}`)
    assert.ok(added > 0)
    assert.ok(added <= 100e6, `${added} bytes above the base`)
  })

  it('runs as a non-root user, with /data its volume, a HEALTHCHECK through /healthz and no secret in its configuration', async () => {
    const config = (await inspect(IMAGE)).Config
    assert.equal(config.User, 'node')
    assert.deepEqual(Object.keys(config.Volumes ?? {}), ['/data'])
    assert.equal(config.WorkingDir, '/app')
    assert.deepEqual(config.Entrypoint, ['node', '/app/dist/main.js'])
    assert.match(config.Healthcheck?.Test.join(' ') ?? '', /\/healthz/)
    const env = Object.fromEntries(
      config.Env.map((line) => [line.slice(0, line.indexOf('=')), line]),
    )
    assert.equal(env.HOST, 'HOST=0.0.0.0')
    assert.equal(env.PORT, 'PORT=3000')
    assert.equal(env.NODE_ENV, undefined, 'the sandbox serves by default, as with npm start')
    for (const name of Object.keys(env)) {
      assert.doesNotMatch(name, /SECRET|PASSWORD|TOKEN|_KEY|DATABASE_URL/, name)
    }
  })

  it('holds the build and the production dependencies only, and nothing of the machine that built it', async () => {
    const { stdout } = await docker([
      'run',
      '--rm',
      '--network',
      'none',
      '--entrypoint',
      'node',
      IMAGE,
      '-e',
      `const fs = require('node:fs')
       const has = (path) => fs.existsSync(path)
       console.log(JSON.stringify({
         app: fs.readdirSync('/app').sort(),
         data: fs.readdirSync('/data'),
         dataLink: fs.readlinkSync('/app/data'),
         dev: ['typescript', 'tsx', 'eslint', 'prettier', 'playwright-core', 'oidc-provider', 'fast-check'].filter((name) => has('/app/node_modules/' + name)),
         prod: ['fastify', 'kysely', 'pg', 'better-sqlite3/build/Release/better_sqlite3.node'].filter((name) => has('/app/node_modules/' + name)),
         writable: (() => { try { fs.writeFileSync('/app/dist/x', ''); return true } catch { return false } })(),
       }))`,
    ])
    const found = JSON.parse(stdout) as Record<string, unknown>
    assert.deepEqual(found.app, [
      'assets',
      'bin',
      'data',
      'dist',
      'node_modules',
      'package-lock.json',
      'package.json',
    ])
    assert.deepEqual(found.data, [])
    assert.equal(found.dataLink, '/data')
    assert.deepEqual(found.dev, [])
    assert.equal((found.prod as string[]).length, 4)
    assert.equal(found.writable, false, 'the service cannot change its own code')
  })

  describe('one container on a read-only root file system, its data in a volume', () => {
    const volume = `campusgate-test-${RUN_ID}-data`
    const started: string[] = []
    let port: number
    let base: string
    let tier2: { sessionKey: string; openId: string }

    /** `docker run` as docs/deployment.md says, on the host's network at `port`. */
    async function start(name: string): Promise<void> {
      started.push(name)
      await docker([
        'run',
        '--detach',
        '--name',
        name,
        '--network',
        'host',
        '--read-only',
        '--tmpfs',
        '/tmp',
        '--env',
        `PORT=${port}`,
        '--volume',
        `${volume}:/data`,
        IMAGE,
      ])
      await healthy(name)
    }

    /** Healthy: the image's own HEALTHCHECK went through /healthz. */
    async function healthy(name: string): Promise<void> {
      await waitFor(
        async () => (await inspect(name)).State?.Health?.Status === 'healthy',
        90_000,
        async () => JSON.stringify((await inspect(name)).State) + (await logsOf(name)),
      )
    }

    before(async () => {
      port = await freePort()
      base = `http://127.0.0.1:${port}`
      await start(`campusgate-test-${RUN_ID}-first`)
    })

    after(async () => {
      for (const name of started) await docker(['rm', '--force', name]).catch(() => undefined)
      await docker(['volume', 'rm', volume]).catch(() => undefined)
    })

    it('runs as the user node (uid 1000), not root, on a read-only root', async () => {
      const name = started[0]
      const { stdout } = await docker(['exec', name, 'id', '-u'])
      assert.equal(stdout.trim(), '1000')
      const container = await inspect(name)
      assert.equal(container.Config.User, 'node')
      assert.equal(container.HostConfig?.ReadonlyRootfs, true)
    })

    it("walks the README's sandbox flow to tier 2, the link read from the log", async () => {
      tier2 = await walkToTier2(base, () => logsOf(started[0]))
    })

    it('writes the SQLite file, the generated key and the outbox under /data', async () => {
      const { stdout } = await docker([
        'exec',
        started[0],
        'node',
        '-e',
        `const fs = require('node:fs')
         console.log(JSON.stringify({
           data: fs.readdirSync('/data').sort(),
           outbox: fs.readdirSync('/data/outbox'),
           key: (fs.statSync('/data/campusgate.key').mode & 0o777).toString(8),
         }))`,
      ])
      const found = JSON.parse(stdout) as { data: string[]; outbox: string[]; key: string }
      for (const file of ['campusgate.db', 'campusgate.key', 'outbox']) {
        assert.ok(found.data.includes(file), `${file} in ${found.data.join(', ')}`)
      }
      assert.ok(found.outbox.some((file) => file.endsWith('.eml')))
      assert.equal(found.key, '600')
    })

    it('runs the campusgate command beside the service: docker exec … campusgate console link', async () => {
      const { stdout } = await docker([
        'exec',
        started[0],
        'campusgate',
        'console',
        'link',
        '--name',
        'container-test',
      ])
      assert.match(stdout, new RegExp(`http://localhost:${port}/console/`))
    })

    it('answers the request in flight on docker stop, then exits 0 within 10 s', async (t) => {
      const name = started[0]
      const body = JSON.stringify({ email: 'in-flight@example.edu' })
      const socket = connect(port, '127.0.0.1')
      let text = ''
      socket.setEncoding('latin1').on('data', (chunk: string) => (text += chunk))
      const closed = once(socket, 'close')
      await once(socket, 'connect')
      socket.write(
        `POST /register/university HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
          `Authorization: ${tier2.sessionKey}\r\nAccept: ${MEDIA_TYPE}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n` +
          `Connection: close\r\n\r\n${body.slice(0, 10)}`,
      )
      // Answered after the write, so the service holds the half-sent request when the signal comes.
      assert.ok(await answersOk(`${base}/healthz`))
      const signalled = Date.now()
      const stopped = docker(['stop', name], { timeoutMs: MINUTE }).then(
        () => Date.now() - signalled,
      )
      await waitFor(
        async () => (await logsOf(name)).includes('"msg":"shutting down: no new connections"'),
        10_000,
        () => logsOf(name),
      )
      socket.write(body.slice(10))
      await closed
      const answer = parseRaw(text, true)
      assert.equal(answer.status, 200, text)
      assert.equal(answer.body, '{}')
      const took = await stopped
      t.diagnostic(`docker stop took ${took} ms`)
      assert.ok(took < 10_000, `docker stop took ${took} ms`)
      assert.equal((await inspect(name)).State?.ExitCode, 0, await logsOf(name))
      assert.doesNotMatch(await logsOf(name), /shutdown grace over/)
    })

    it('serves the same users from the volume in a new container', async () => {
      await start(`campusgate-test-${RUN_ID}-second`)
      const session = await call(`${base}/session`, {
        headers: { authorization: tier2.sessionKey },
      })
      assert.equal(session.status, 200, session.text)
      assert.equal(session.body.openId, tier2.openId)
      assert.equal(session.body.tier, 'university-registered')
    })

    it("backs up and restores the SQLite volume with docs/deployment.md's recipe", async () => {
      // The recipe's container, volume and image are all named campusgate; here they are this test's.
      assert.deepEqual(backupRecipe('SQLite'), [
        'docker exec campusgate campusgate backup /data/backups/',
        'docker stop campusgate',
        'docker run --rm -v campusgate-data:/data campusgate restore /data/backups/campusgate-20260101T060000.000Z.db',
        'docker start campusgate',
      ])
      const name = started[1]
      const backedUp = await docker(['exec', name, 'campusgate', 'backup', '/data/backups/'])
      const written = /backup written to (\/data\/backups\/\S+\.db) /.exec(backedUp.stdout)?.[1]
      assert.ok(written, backedUp.stdout)
      const later = await registerMessenger(base)
      await docker(['stop', name], { timeoutMs: MINUTE })
      const restored = await docker(
        ['run', '--rm', '-v', `${volume}:/data`, IMAGE, 'restore', written],
        { timeoutMs: MINUTE },
      )
      assert.match(restored.stdout, /restored/)
      await docker(['start', name])
      await healthy(name)
      const kept = await call(`${base}/session`, { headers: { authorization: tier2.sessionKey } })
      assert.equal(kept.status, 200, kept.text)
      const gone = await call(`${base}/session`, { headers: { authorization: later.sessionKey } })
      assert.equal(gone.status, 401, 'registered after the backup, so not in it')
      await docker(['stop', name], { timeoutMs: MINUTE })
    })
  })

  describe('compose.yaml with compose.host-network.yaml: PostgreSQL, Redis and two instances', () => {
    const project = `campusgatetest${RUN_ID}`
    let directory: string
    let compose: (args: string[], env?: Record<string, string>) => Promise<Output>
    /** The compose command line as a shell would run it, for the recipes of docs/deployment.md. */
    let composeInShell: string
    let first: string
    let second: string

    before(
      async () => {
        const failed = await serviceImages
        if (failed !== null) throw failed
        const command = composeCommand()
        assert.ok(command, 'neither docker compose nor docker-compose is installed')
        const ports = {
          CAMPUSGATE_1_PORT: await freePort(),
          CAMPUSGATE_2_PORT: await freePort(),
          POSTGRES_PORT: await freePort(),
          REDIS_PORT: await freePort(),
        }
        first = `http://127.0.0.1:${ports.CAMPUSGATE_1_PORT}`
        second = `http://127.0.0.1:${ports.CAMPUSGATE_2_PORT}`
        // The project's own directory holds the .env, made by the README's line as an operator's
        // checkout would have it, plus the image and the free ports.
        directory = mkdtempSync(join(tmpdir(), 'campusgate-compose-'))
        // compose.yaml mounts the checkout's deploy/postgres-initdb, relative to the project.
        symlinkSync(join(ROOT, 'deploy'), join(directory, 'deploy'))
        await run('sh', ['-c', readmeMakesEnv()], { cwd: directory })
        const envFile = join(directory, '.env')
        assert.equal(statSync(envFile).mode & 0o777, 0o600)
        const made = readFileSync(envFile, 'utf8')
        assert.match(made, /^POSTGRES_PASSWORD=[0-9a-f]{48}$/m)
        assert.match(made, /^DATA_ENCRYPTION_KEY=[A-Za-z0-9+/]{43}=$/m)
        const more = [
          `CAMPUSGATE_IMAGE=${IMAGE}`,
          ...Object.entries(ports).map(([name, value]) => `${name}=${value}`),
        ]
        appendFileSync(envFile, `${more.join('\n')}\n`)
        const commandWith = (files: string[]) => [
          ...command,
          '--project-name',
          project,
          '--project-directory',
          directory,
          '--env-file',
          envFile,
          ...files.flatMap((file) => ['--file', join(ROOT, file)]),
        ]
        const withFiles =
          (files: string[]) =>
          (args: string[], env: Record<string, string> = {}) => {
            const [program, ...rest] = commandWith(files)
            return run(program, [...rest, ...args], { timeoutMs: 5 * MINUTE, env })
          }
        composeInShell = commandWith(['compose.yaml', 'compose.host-network.yaml'])
          .map((arg) => `'${arg.replaceAll("'", "'\\''")}'`)
          .join(' ')
        // What `docker compose up` reads on a machine with a bridge network is valid too.
        await withFiles(['compose.yaml', 'compose.override.yaml'])(['config', '--quiet'])
        compose = withFiles(['compose.yaml', 'compose.host-network.yaml'])
        await up()
      },
      { timeout: 15 * MINUTE },
    )

    after(async () => {
      if (compose !== undefined) {
        await compose(['down', '--volumes', '--remove-orphans', '--timeout', '20'])
        const label = `label=com.docker.compose.project=${project}`
        const left = await Promise.all([
          docker(['ps', '--all', '--quiet', '--filter', label]),
          docker(['network', 'ls', '--quiet', '--filter', label]),
        ])
        assert.deepEqual(
          left.map(({ stdout }) => stdout.trim()),
          ['', ''],
        )
      }
      if (directory !== undefined) rmSync(directory, { recursive: true, force: true })
    })

    async function up(): Promise<void> {
      await compose(['up', '--detach', '--no-build'])
      for (const url of [first, second]) await ready(url)
    }

    async function ready(url: string): Promise<void> {
      await waitFor(
        () => answersOk(`${url}/readyz`),
        2 * MINUTE,
        async () => (await compose(['logs', '--no-color'])).stdout.slice(-5000),
      )
    }

    /** A line of docs/deployment.md's recipes, `docker compose` being this project's. */
    async function runRecipeLine(line: string): Promise<Output> {
      assert.match(line, /^docker compose /)
      return run('sh', ['-c', line.replace(/^docker compose /, `${composeInShell} `)], {
        cwd: directory,
        timeoutMs: 5 * MINUTE,
      })
    }

    it('a key issued by one instance works on the other', async () => {
      const user = await registerMessenger(first)
      const session = await call(`${second}/session`, {
        headers: { authorization: user.sessionKey },
      })
      assert.equal(session.status, 200, session.text)
      assert.equal(session.body.openId, user.openId)
    })

    it('a logout on one instance is refused by the other at once', async () => {
      const user = await registerMessenger(first)
      const logout = await call(`${second}/logout`, {
        method: 'POST',
        headers: { authorization: user.sessionKey },
      })
      assert.equal(logout.status, 200, logout.text)
      const refused = await call(`${first}/session`, {
        headers: { authorization: user.sessionKey },
      })
      assert.equal(refused.status, 401)
      assert.deepEqual(refused.body, { error: '@unauthorized/invalid-session-key' })
    })

    it('connects as a role that owns its database and is no superuser; the superuser has no password', async () => {
      const { stdout } = await compose([
        'exec',
        '-T',
        'postgres',
        'psql',
        '--username',
        'postgres',
        '--dbname',
        'campusgate',
        '--tuples-only',
        '--no-align',
        '--command',
        `SELECT r.rolsuper, r.rolcreaterole, r.rolcreatedb,
           (SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tableowner <> r.rolname),
           (SELECT count(*) > 10 FROM pg_tables WHERE schemaname = 'public'),
           (SELECT datdba = r.oid FROM pg_database WHERE datname = 'campusgate'),
           (SELECT rolpassword IS NULL FROM pg_authid WHERE rolname = 'postgres'),
           (SELECT count(*) FROM pg_stat_activity WHERE datname = 'campusgate' AND usename = 'postgres' AND pid <> pg_backend_pid())
         FROM pg_roles r WHERE r.rolname = 'campusgate'`,
      ])
      // Not a superuser, creates no role nor database; owns every table (the migrations ran as
      // it) and the database; the superuser signs in only on the container's socket, and no
      // instance uses it.
      assert.equal(stdout.trim(), 'f|f|f|0|t|t|t|0')
    })

    it("backs up and restores PostgreSQL with docs/deployment.md's recipe", async () => {
      const recipe = backupRecipe('PostgreSQL')
      assert.deepEqual(recipe, [
        'docker compose exec -T postgres pg_dump --username campusgate --format custom campusgate > campusgate.dump',
        'docker compose stop campusgate-1 campusgate-2',
        'docker compose exec -T postgres pg_restore --username campusgate --clean --if-exists --single-transaction --dbname campusgate < campusgate.dump',
        'docker compose start campusgate-1 campusgate-2',
      ])
      const kept = await registerMessenger(first)
      await runRecipeLine(recipe[0])
      assert.ok(statSync(join(directory, 'campusgate.dump')).size > 10_000)
      const later = await registerMessenger(first)
      for (const line of recipe.slice(1)) await runRecipeLine(line)
      for (const url of [first, second]) await ready(url)
      const session = await call(`${second}/session`, {
        headers: { authorization: kept.sessionKey },
      })
      assert.equal(session.status, 200, session.text)
      const gone = await call(`${first}/session`, { headers: { authorization: later.sessionKey } })
      assert.equal(gone.status, 401, 'registered after the dump, so not in it')
    })

    it('rolls back to the previous release and forward again on the same PostgreSQL, a request answered throughout', async (t) => {
      const previous = (
        await run('bash', ['test/container/previous-release.sh'], { timeoutMs: 20 * MINUTE })
      ).stdout.trim()
      const user = await registerMessenger(first)
      // A load balancer's view: it asks the instances in service in turn; an instance leaves
      // the rotation before it is replaced and comes back once its /readyz says ready.
      const inService = new Set([first, second])
      const answers: Array<{ url: string; status: number }> = []
      let streaming = true
      const stream = (async () => {
        for (let turn = 0; streaming; turn += 1) {
          const urls = [...inService]
          const url = urls[turn % urls.length]
          const answer = await call(`${url}/session`, {
            headers: { authorization: user.sessionKey },
          })
          answers.push({ url, status: answer.status })
          // At most ~400 a minute: the key's own budget is RATE_LIMIT_PER_SESSION, 600 by default.
          await sleep(150)
        }
      })()
      const switchTo = async (image: string, service: string, url: string): Promise<void> => {
        inService.delete(url)
        // A new container each time, so that its log is its own.
        await compose(['up', '--detach', '--no-deps', '--no-build', '--force-recreate', service], {
          CAMPUSGATE_IMAGE: image,
        })
        await ready(url)
        inService.add(url)
      }
      const logsOfService = async (service: string): Promise<string> =>
        (await compose(['logs', '--no-color', service])).stdout
      const unknownWarning =
        /"unknownMigrations":\["0019_user_suspension","0020_webhook_first_try"\]/
      try {
        // Rolled back, one instance at a time: the previous release serves the newer schema.
        await switchTo(previous, 'campusgate-2', second)
        await switchTo(previous, 'campusgate-1', first)
        assert.match(await logsOfService('campusgate-1'), unknownWarning)

        // The newer release's migrate --to takes the schema back while the previous one serves.
        const [lastOfPrevious] = (
          await docker(['run', '--rm', '--entrypoint', 'ls', previous, '/app/dist/db/migrations'])
        ).stdout
          .split('\n')
          .filter((file) => /^\d{4}_\w+\.js$/.test(file))
          .map((file) => file.slice(0, -'.js'.length))
          .sort()
          .reverse()
        assert.equal(lastOfPrevious, '0018_console_list_indexes')
        // docs/operations.md, "Upgrades and rollbacks": `docker run` of the newer image with the
        // instances' DATABASE_URL and key (here on the host's network, as the instances are).
        const env = readFileSync(join(directory, '.env'), 'utf8')
        const setting = (name: string): string =>
          new RegExp(`^${name}=(.*)$`, 'm').exec(env)?.[1] ?? ''
        const moved = await docker(
          [
            'run',
            '--rm',
            '--network',
            'host',
            '--env',
            `DATABASE_URL=postgres://campusgate:${setting('POSTGRES_PASSWORD')}@127.0.0.1:${setting('POSTGRES_PORT')}/campusgate`,
            '--env',
            `DATA_ENCRYPTION_KEY=${setting('DATA_ENCRYPTION_KEY')}`,
            IMAGE,
            'migrate',
            '--to',
            lastOfPrevious,
          ],
          { timeoutMs: 2 * MINUTE },
        )
        assert.match(
          moved.stdout,
          /ran 0020_webhook_first_try, 0019_user_suspension; schema is at 0018_console_list_indexes/,
        )
        // Started again on the schema it knows, the previous release warns of nothing.
        await switchTo(previous, 'campusgate-2', second)
        assert.doesNotMatch(await logsOfService('campusgate-2'), unknownWarning)

        // Forward again: the newer release migrates as it starts.
        await switchTo(IMAGE, 'campusgate-2', second)
        await switchTo(IMAGE, 'campusgate-1', first)
      } finally {
        streaming = false
        await stream
      }
      t.diagnostic(`${answers.length} requests through the switch`)
      assert.deepEqual(
        answers.filter((answer) => answer.status !== 200),
        [],
        'every request in service answered 200',
      )
      assert.ok(answers.length > 40, `${answers.length} requests`)
      const session = await call(`${second}/session`, {
        headers: { authorization: user.sessionKey },
      })
      assert.equal(session.status, 200, session.text)
    })

    it("keeps PostgreSQL's data across down and up without -v", async () => {
      const user = await registerMessenger(second)
      await compose(['down', '--timeout', '20'])
      const running = await docker([
        'ps',
        '--all',
        '--quiet',
        '--filter',
        `label=com.docker.compose.project=${project}`,
      ])
      assert.equal(running.stdout.trim(), '', 'down removed the containers')
      await up()
      const session = await call(`${first}/session`, {
        headers: { authorization: user.sessionKey },
      })
      assert.equal(session.status, 200, session.text)
      assert.equal(session.body.openId, user.openId)
    })
  })

  it("docs/deployment.md's Kubernetes example asks for what the image does", () => {
    const doc = readFileSync('docs/deployment.md', 'utf8')
    const kubernetes = /^## Kubernetes$([\s\S]*?)^## /m.exec(doc)?.[1] ?? ''
    for (const line of [
      'containerPort: 3000',
      'path: /healthz',
      'path: /readyz',
      'runAsUser: 1000',
      'runAsNonRoot: true',
      'readOnlyRootFilesystem: true',
      'mountPath: /data',
      'mountPath: /tmp',
    ]) {
      assert.ok(kubernetes.includes(line), `the Kubernetes example has "${line}"`)
    }
  })
})

/**
 * The README's command that makes the .env compose.yaml reads, up to `docker compose up`;
 * docs/deployment.md gives the same line.
 */
function readmeMakesEnv(): string {
  const line = (file: string) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .find((text) => text.startsWith('[ -e .env ] ||'))
  const command = line('README.md')
  assert.ok(command, 'the README makes the .env')
  assert.equal(line('docs/deployment.md'), command)
  const end = command.indexOf(' && docker compose up --build')
  assert.ok(end > 0, command)
  return command.slice(0, end)
}

/** Builds the image (and tags its build stage, so that stale stages can go), keeping the cache. */
async function buildImage(): Promise<void> {
  const tags = [IMAGE, BUILD_STAGE]
  const before = await Promise.all(tags.map(imageId))
  const build = ['build', '--network', 'host', '--force-rm']
  await docker([...build, '--tag', IMAGE, '.'], { cwd: ROOT, timeoutMs: 25 * MINUTE })
  await docker([...build, '--target', 'build', '--tag', BUILD_STAGE, '.'], {
    cwd: ROOT,
    timeoutMs: 5 * MINUTE,
  })
  const now = await Promise.all(tags.map(imageId))
  // The images this build replaced; layers the new ones still use stay.
  for (const [index, old] of before.entries()) {
    if (old !== null && old !== now[index]) {
      await docker(['image', 'rm', old]).catch(() => undefined)
    }
  }
}

async function volumeNames(): Promise<Set<string>> {
  const { stdout } = await docker(['volume', 'ls', '--quiet'])
  return new Set(stdout.split('\n').filter((name) => name !== ''))
}

async function logsOf(name: string): Promise<string> {
  const { stdout, stderr } = await docker(['logs', name])
  return stdout + stderr
}

/** README, "Walk through the flow with curl", steps 1 and 2: a sandbox login code, then tier 1. */
async function registerMessenger(base: string): Promise<{ sessionKey: string; openId: string }> {
  const minted = await fetch(`${base}/_sandbox/messenger/login-codes`, { method: 'POST' })
  assert.equal(minted.status, 200)
  const login = (await minted.json()) as { code: string; openId: string; appId: string }
  const registered = await call(`${base}/register/messenger`, {
    method: 'POST',
    json: { appId: login.appId, appSecret: 'server-held', code: login.code },
  })
  assert.equal(registered.status, 200, registered.text)
  return { sessionKey: registered.body.sessionKey as string, openId: login.openId }
}

/** The README's walk, steps 1 to 6: tier 1, the emailed link from the log, the sandbox provider, tier 2. */
async function walkToTier2(
  base: string,
  logs: () => Promise<string>,
): Promise<{ sessionKey: string; openId: string }> {
  const user = await registerMessenger(base)
  const session = await call(`${base}/session`, { headers: { authorization: user.sessionKey } })
  assert.equal(session.status, 200, session.text)
  assert.equal(session.body.tier, 'messenger-registered')

  const linksIn = async () =>
    [...(await logs()).matchAll(/"link":"([^"]*universityRegistrationCode=[^"]*)"/g)].map(
      (match) => match[1],
    )
  const earlier = (await linksIn()).length
  const asked = await call(`${base}/register/university`, {
    method: 'POST',
    headers: { authorization: user.sessionKey },
    json: { email: 'student@example.edu' },
  })
  assert.equal(asked.status, 200, asked.text)
  assert.deepEqual(asked.body, {})
  await waitFor(async () => (await linksIn()).length > earlier, 10_000, logs)
  const link = (await linksIn())[earlier]

  const opened = await openLink(link)
  assert.equal(opened.status, 301)
  const page = await fetch(opened.location)
  assert.equal(page.status, 200)
  assert.match(await page.text(), /University sign-in \(sandbox\)/)
  const decision = await fetch(
    new URL('/_sandbox/university/authorise/decision', opened.location),
    {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        client_id: 'sandbox-client',
        state: user.openId,
        decision: 'allow',
      }).toString(),
    },
  )
  await decision.arrayBuffer()
  assert.equal(decision.status, 302)
  const done = await followCallback(decision.headers.get('location')!, opened.cookie)
  assert.equal(done.status, 200)
  assert.match(done.text, /University account linked/)

  const linked = await call(`${base}/session`, { headers: { authorization: user.sessionKey } })
  assert.equal(linked.body.tier, 'university-registered')
  return user
}

/**
 * The commands of docs/deployment.md's backup recipe under "### {heading}" (in "Backups in
 * containers"): the lines of its first sh block, comments left out.
 */
function backupRecipe(heading: string): string[] {
  const doc = readFileSync('docs/deployment.md', 'utf8')
  const section = /^## Backups in containers$([\s\S]*?)^## /m.exec(doc)?.[1] ?? ''
  const part = section.split(/^### /m).find((text) => text.startsWith(heading)) ?? ''
  const block = /```sh\n([\s\S]*?)```/.exec(part)?.[1] ?? ''
  return block
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
}
