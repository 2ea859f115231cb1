import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { COMMANDS } from '../../src/cli/run.js'
import { loadConfig } from '../../src/config.js'
import { ERRORS } from '../../src/errors.js'
import { EVENT_TYPES, SESSION_END_REASONS, UNLINK_REASONS } from '../../src/events/types.js'

// The repository is its own contract: README.md and docs/ state what the code implements, and the
// code cites them. These hold the lists both sides name to each other, both ways: a variable, an
// error code, an event type or a command the code has and the docs do not name fails here, and
// so does one the docs name that the code does not have.

const DOC_PAGES = readdirSync('docs').filter((name) => name.endsWith('.md'))
const read = (path: string): string => readFileSync(path, 'utf8')
const sorted = (values: Iterable<string>): string[] => [...new Set(values)].sort()

/** The lines of the Markdown section of `text` under `heading`, up to the next heading as high. */
function section(text: string, heading: string): string {
  const lines = text.split('\n')
  const start = lines.findIndex((line) => line.replace(/^#+\s*/, '') === heading)
  assert.notEqual(start, -1, `no section "${heading}"`)
  const level = /^#+/.exec(lines[start])![0].length
  const end = lines.findIndex(
    (line, i) => i > start && /^#+\s/.test(line) && /^#+/.exec(line)![0].length <= level,
  )
  return lines.slice(start, end === -1 ? undefined : end).join('\n')
}

/** The first cell of each row of the Markdown tables in `text`, backticks included. */
function firstCells(text: string): string[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => line.split(/(?<!\\)\|/)[1].trim())
}

/** Every name of the environment that `loadConfig` reads, over settings that reach every reader. */
function variablesTheCodeReads(): string[] {
  const seen = new Set<string>()
  const profiles: Record<string, string>[] = [
    {},
    { NODE_ENV: 'production' },
    { UNIVERSITY_PROTOCOL: 'oidc', UNIVERSITY_ISSUER: 'https://login.example.edu' },
    { DATABASE_URL: 'postgres://127.0.0.1/campusgate' },
    { WEBHOOK_URL: 'https://hooks.example.org/campusgate' },
    { BACKUP_DIR: '/var/backups/campusgate', BACKUP_INTERVAL: '6h' },
  ]
  for (const profile of profiles) {
    const env = new Proxy(profile, {
      get: (target, name) => {
        if (typeof name === 'string') seen.add(name)
        return target[name as string]
      },
      has: (target, name) => {
        if (typeof name === 'string') seen.add(name)
        return name in target
      },
    })
    try {
      loadConfig(env)
    } catch {
      // A profile that is not a whole configuration still reads every variable (one pass).
    }
  }
  return sorted(seen)
}

describe('the docs and the code name the same things', () => {
  it('configuration: the variables loadConfig reads are the rows of the README’s Configuration table', () => {
    const documented = firstCells(section(read('README.md'), 'Configuration'))
      .map((cell) => /^`([A-Z][A-Z0-9_]*)`$/.exec(cell)?.[1])
      .filter((name) => name !== undefined)
    assert.deepEqual(sorted(documented), variablesTheCodeReads())
  })

  it('errors: the codes of src/errors.ts are the rows of the README’s Errors table', () => {
    const rows = section(read('README.md'), 'Errors')
      .split('\n')
      .filter((line) => line.startsWith('| '))
      .map((line) => /`(@[a-z-]+\/[a-z-]+)`/.exec(line)?.[1])
      .filter((code) => code !== undefined)
    assert.deepEqual(sorted(rows), sorted(Object.values(ERRORS).map((row) => row.code)))
  })

  it('events: the event types and reasons are those of docs/webhooks.md’s table', () => {
    const table = section(read('docs/webhooks.md'), 'The events')
    const types = firstCells(table)
      .filter((cell) => /^`[a-z]+\.[a-z]+`$/.test(cell))
      .map((cell) => cell.replaceAll('`', ''))
    assert.deepEqual(sorted(types), sorted(EVENT_TYPES))
    const row = (type: string) =>
      table.split('\n').find((line) => line.startsWith(`| \`${type}\``))!
    const reasons = (line: string) =>
      sorted([...line.split('`reason`')[1].matchAll(/`([a-z]+)`/g)].map((match) => match[1]))
    assert.deepEqual(reasons(row('session.ended')), sorted(SESSION_END_REASONS))
    assert.deepEqual(reasons(row('university.unlinked')), sorted(UNLINK_REASONS))
  })

  it('commands: every campusgate command is a row of docs/operations.md’s command table, and no other', () => {
    const documented = firstCells(section(read('docs/operations.md'), 'The `campusgate` command'))
      .filter((cell) => cell.startsWith('`campusgate '))
      .map((cell) => {
        const words = cell.replaceAll('`', '').split(' ').slice(1)
        const end = words.findIndex((word) => !/^[a-z][a-z-]*$/.test(word))
        return words.slice(0, end === -1 ? undefined : end).join(' ')
      })
    assert.deepEqual(sorted(documented), sorted(COMMANDS.map((command) => command.name)))
  })

  it('citations: every docs/<page>.md, "<heading>" the code cites is a heading of that page', () => {
    const files = execFileSync('git', ['ls-files', 'src', 'test', 'bench', 'scripts', 'packages'], {
      encoding: 'utf8',
    })
      .split('\n')
      .filter((path) => /\.(ts|mjs|cjs|js)$/.test(path))
    const missing: string[] = []
    for (const file of files) {
      for (const match of read(file).matchAll(/docs\/([a-z-]+\.md), "([^"\n]+)"/g)) {
        const [, page, heading] = match
        if (!DOC_PAGES.includes(page)) {
          missing.push(`${file}: docs/${page} does not exist`)
          continue
        }
        const headings = read(`docs/${page}`)
          .split('\n')
          .filter((line) => /^#+\s/.test(line))
          .map((line) => line.replace(/^#+\s*/, ''))
        if (!headings.includes(heading)) missing.push(`${file}: docs/${page} has no "${heading}"`)
      }
    }
    assert.deepEqual(missing, [])
  })

  it('nothing in the repository cites a document outside it', () => {
    const files = execFileSync('git', ['ls-files'], { encoding: 'utf8' })
      .split('\n')
      .filter((path) => /\.(ts|mjs|cjs|js|md|json|ya?ml|sh|css|html|lua)$/.test(path))
      .filter((path) => !path.startsWith('bench/results/'))
    const outside = files.filter((file) => /\bSPEC(\.md)?\b|\.\.\/shared\//.test(read(file)))
    assert.deepEqual(outside, [])
  })
})
