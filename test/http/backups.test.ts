import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
  closeSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { after, afterEach, describe, it } from 'node:test'
import SQLite from 'better-sqlite3'
import { createBackupSchedule } from '../../src/backup/schedule.js'
import { TEST_DIALECT } from '../helpers/database.js'
import { call, WITHOUT_ADDRESS_LIMITS } from '../helpers/service.js'
import {
  mintLoginCode,
  registerMessenger,
  sessionOf,
  startStack,
  type Stack,
} from '../helpers/stack.js'
import { SANDBOX_APP } from '../../src/sandbox/routes.js'

// docs/operations.md, "Backups and restores". The commands run as the installed binary (npm run build first).
const BIN = resolve('bin/campusgate.js')

interface Run {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs the command without blocking this process, which serves the service under test. */
function campusgate(env: Record<string, string>, ...args: string[]): Promise<Run> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { PATH: process.env.PATH, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.once('error', fail)
    child.once('exit', (code) => done({ code, stdout, stderr }))
  })
}

function integrityOf(path: string): unknown {
  const sqlite = new SQLite(path, { readonly: true })
  try {
    return sqlite.pragma('integrity_check', { simple: true })
  } finally {
    sqlite.close()
  }
}

function sha256(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex')
}

if (TEST_DIALECT === 'sqlite') {
  describe('SQLite backups and restores (issue 28)', () => {
    const dirs: string[] = []
    let stack: Stack | undefined
    afterEach(async () => {
      await stack?.close()
      stack = undefined
    })
    after(() => {
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
    })

    function workDir(): string {
      const dir = mkdtempSync(join(tmpdir(), 'campusgate-backup-'))
      dirs.push(dir)
      return dir
    }

    it('a backup taken during registrations holds every one answered before it began, passes integrity_check, and restores', async () => {
      const dir = workDir()
      const database = join(dir, 'campusgate.db')
      const env = { DATABASE_URL: `sqlite:${database}` }
      stack = await startStack({ ...env, LOG_LEVEL: 'warn' }, WITHOUT_ADDRESS_LIMITS)
      const service = stack
      const accepted: string[] = []
      let loading = true
      const statuses: number[] = []
      const load = Promise.all(
        [1, 2, 3, 4].map(async () => {
          while (loading) {
            const login = await mintLoginCode(service)
            const answer = await call(`${service.service.url}/register/messenger`, {
              method: 'POST',
              json: {
                appId: SANDBOX_APP.appId,
                appSecret: SANDBOX_APP.appSecret,
                code: login.code,
              },
            })
            statuses.push(answer.status)
            if (answer.status === 200) accepted.push(answer.body.sessionKey as string)
          }
        }),
      )
      while (accepted.length < 40) await new Promise((done) => setTimeout(done, 20))
      const before = [...accepted]
      const copy = join(dir, 'copy.db')
      const backup = await campusgate(env, 'backup', copy)
      const afterBackup = accepted.length
      // Registrations go on after the copy: the restore must take them away again.
      while (accepted.length < afterBackup + 10) await new Promise((done) => setTimeout(done, 20))
      loading = false
      await load
      const later = accepted.slice(afterBackup)
      assert.equal(backup.code, 0, backup.stderr)
      assert.match(backup.stdout, /integrity_check ok/)
      assert.deepEqual(new Set(statuses), new Set([200]))
      assert.equal(statSync(copy).mode & 0o777, 0o600)
      assert.equal(integrityOf(copy), 'ok')
      assert.deepEqual(
        readdirSync(dir).filter((name) => name.endsWith('.partial')),
        [],
      )

      await stack.close()
      stack = undefined
      const restore = await campusgate(env, 'restore', copy)
      assert.equal(restore.code, 0, restore.stderr)
      assert.equal(integrityOf(database), 'ok')

      stack = await startStack({ ...env, LOG_LEVEL: 'warn' }, WITHOUT_ADDRESS_LIMITS)
      for (const key of before) {
        assert.equal((await sessionOf(stack, key)).status, 200, 'a key issued before the backup')
      }
      for (const key of later) {
        assert.equal((await sessionOf(stack, key)).status, 401, 'a key issued after the backup')
      }
      assert.ok((await registerMessenger(stack)).sessionKey.length > 0)
    })

    it('restore refuses a corrupted backup, or no campusgate database, and leaves the database as it was', async () => {
      const dir = workDir()
      const database = join(dir, 'campusgate.db')
      const env = { DATABASE_URL: `sqlite:${database}` }
      stack = await startStack({ ...env, LOG_LEVEL: 'warn' }, WITHOUT_ADDRESS_LIMITS)
      const users = await Promise.all([1, 2, 3, 4, 5].map(() => registerMessenger(stack!)))
      const copy = join(dir, 'copy.db')
      assert.equal((await campusgate(env, 'backup', copy)).code, 0)
      // A folder named with a final slash is made (0700) and gets a dated copy.
      const intoNew = await campusgate(env, 'backup', join(dir, 'made', 'here') + '/')
      assert.equal(intoNew.code, 0, intoNew.stderr)
      const made = join(dir, 'made', 'here')
      assert.equal(statSync(made).mode & 0o777, 0o700)
      assert.match(readdirSync(made).join(), /^campusgate-\d{8}T\d{6}\.\d{3}Z\.db$/)
      assert.match(intoNew.stdout, new RegExp(`backup written to ${made}/campusgate-`))
      // Not under a running service.
      const inUse = await campusgate(env, 'restore', copy)
      assert.equal(inUse.code, 1, inUse.stdout)
      assert.match(inUse.stderr, /in use by another process: stop the service/)
      assert.equal((await sessionOf(stack, users[0].sessionKey)).status, 200)
      await stack.close()
      stack = undefined

      // Garbage over the middle of the copy, as a bad disk or a cut transfer leaves it.
      const corrupted = join(dir, 'corrupted.db')
      writeFileSync(corrupted, readFileSync(copy))
      const size = statSync(corrupted).size
      const fd = openSync(corrupted, 'r+')
      writeSync(fd, Buffer.alloc(Math.floor(size / 2), 0xa5), 0, Math.floor(size / 2), 4096)
      closeSync(fd)
      const truncated = join(dir, 'truncated.db')
      writeFileSync(truncated, readFileSync(copy).subarray(0, 3000))
      const stranger = join(dir, 'stranger.db')
      new SQLite(stranger).exec('CREATE TABLE notes (body TEXT)')

      const before = sha256(database)
      const usage = await campusgate(env, 'restore')
      assert.equal(usage.code, 2, 'no PATH: a wrong command line')
      assert.match(usage.stderr, /PATH is required/)
      for (const bad of [corrupted, truncated, stranger, join(dir, 'missing.db')]) {
        const refused = await campusgate(env, 'restore', bad)
        assert.equal(refused.code, 1, `${bad}: ${refused.stdout}`)
        assert.match(refused.stderr, /refused, the database is unchanged/)
        assert.equal(sha256(database), before, bad)
        assert.equal(existsSync(`${database}.partial`), false)
      }

      stack = await startStack({ ...env, LOG_LEVEL: 'warn' }, WITHOUT_ADDRESS_LIMITS)
      for (const user of users) assert.equal((await sessionOf(stack, user.sessionKey)).status, 200)
    })

    it('the service takes backups on its schedule, one instance at a time, keeps the newest BACKUP_KEEP, and reports the newest age', async () => {
      const dir = workDir()
      const backups = join(dir, 'backups')
      stack = await startStack(
        { BACKUP_DIR: backups, BACKUP_INTERVAL: '1h', BACKUP_KEEP: '3', LOG_LEVEL: 'warn' },
        WITHOUT_ADDRESS_LIMITS,
      )
      const { service } = stack
      const schedule = service.backups!
      assert.ok(schedule !== null)
      await registerMessenger(stack)
      // The round at start-up wrote the first copy; another right away writes none.
      assert.deepEqual(await schedule.runOnce(), { skipped: 'recent-enough' })
      // An unfinished copy a crash left behind: never counted, removed by the next round.
      writeFileSync(join(backups, '.campusgate-20251231T000000.000Z.db.partial'), 'half')
      const written: string[] = []
      for (let round = 0; round < 4; round += 1) {
        service.clock.advance(3_600_000)
        await registerMessenger(stack)
        const result = await schedule.runOnce()
        assert.ok('written' in result, JSON.stringify(result))
        written.push(result.written)
      }
      const names = readdirSync(backups).sort()
      assert.deepEqual(
        names,
        written
          .slice(-3)
          .map((path) => path.slice(backups.length + 1))
          .sort(),
      )
      for (const name of names) {
        assert.equal(statSync(join(backups, name)).mode & 0o777, 0o600)
        assert.equal(integrityOf(join(backups, name)), 'ok')
      }

      // A second instance on the same database finds the lease taken.
      const other = createBackupSchedule({
        db: service.db.kysely,
        sqlitePath: service.db.sqlitePath!,
        config: service.config.backups!,
        clock: service.clock,
        log: service.app.log,
      })
      service.clock.advance(3_600_000 - 1)
      assert.deepEqual(await other.runOnce(), { skipped: 'another-instance' })

      const metrics = await call(`${service.url}/metrics`, { headers: { accept: '*/*' } })
      assert.match(metrics.text, /^campusgate_backup_newest_age_seconds 3599\.999$/m)
    })
  })
} else {
  describe('backups on PostgreSQL (issue 28)', () => {
    it('the backup and restore commands point to PostgreSQL’s own tools', async () => {
      const env = { DATABASE_URL: process.env.DATABASE_URL! }
      for (const command of ['backup', 'restore']) {
        const run = await campusgate(env, command, join(tmpdir(), 'never.db'))
        assert.equal(run.code, 1)
        assert.match(run.stderr, /pg_dump/)
      }
    })
  })
}
