import { readFileSync } from 'node:fs'
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { createDb } from '../../src/db/database.js'
import { cipherFor } from '../../src/secrets-at-rest.js'
import { TestClock } from '../helpers/clock.js'
import { call, MEDIA_TYPE, startService, type RunningService } from '../helpers/service.js'
import { registerMessenger, startStack, type Stack } from '../helpers/stack.js'

const METRICS_TOKEN = 'metrics-token-0123456789abcdef'

/** The value of one sample line of the exposition text, or 0 when the series is absent. */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `))
  return line === undefined ? 0 : Number(line.slice(series.length + 1))
}

async function scrape(url: string, headers: Record<string, string> = {}): Promise<string> {
  const response = await fetch(`${url}/metrics`, { headers })
  assert.equal(response.status, 200)
  assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/)
  return response.text()
}

describe('health, readiness and metrics', () => {
  let stack: Stack

  before(async () => {
    stack = await startStack()
  })
  after(() => stack.close())

  it('GET /healthz answers 200 {"status":"ok"}', async () => {
    const response = await call(`${stack.service.url}/healthz`)
    assert.equal(response.status, 200)
    assert.equal(response.headers.get('content-type'), MEDIA_TYPE)
    assert.deepEqual(response.body, { status: 'ok' })
  })

  it('GET /readyz answers 200 {"status":"ready"} on a current schema', async () => {
    const response = await call(`${stack.service.url}/readyz`)
    assert.equal(response.status, 200)
    assert.deepEqual(response.body, { status: 'ready' })
  })

  it('GET /metrics shows process metrics, requests by route and status, provider calls', async () => {
    await call(`${stack.service.url}/session`)
    await registerMessenger(stack)
    const text = await scrape(stack.service.url)
    assert.match(text, /^process_cpu_user_seconds_total /m)
    assert.match(text, /^nodejs_heap_size_used_bytes /m)
    assert.ok(
      sample(
        text,
        'campusgate_http_request_duration_seconds_count{method="GET",route="/session",status_code="403"}',
      ) >= 1,
    )
    assert.ok(
      sample(
        text,
        'campusgate_http_request_duration_seconds_count{method="POST",route="/register/messenger",status_code="200"}',
      ) >= 1,
    )
    assert.ok(
      sample(
        text,
        'campusgate_provider_request_duration_seconds_count{provider="messenger",outcome="ok"}',
      ) >= 1,
    )
    // The release's version (package.json) and the commit it was built from.
    const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string }
    assert.match(
      text,
      new RegExp(`^campusgate_build_info\\{version="${version}",revision="[^"]+"\\} 1$`, 'm'),
    )
    // The route pattern, never the raw URL with its query string.
    await call(`${stack.service.url}/authorize/university?universityRegistrationCode=secret-ish`)
    assert.ok(!(await scrape(stack.service.url)).includes('secret-ish'))
  })

  it('counts queued mail and the age of the oldest while the worker is stopped', async () => {
    await stack.service.mailWorker.stop()
    const { sessionKey } = await registerMessenger(stack)
    const queued = await call(`${stack.service.url}/register/university`, {
      method: 'POST',
      headers: { authorization: sessionKey },
      json: { email: 'queued@example.edu' },
    })
    assert.equal(queued.status, 200)
    stack.service.clock.advance(90_000)
    const text = await scrape(stack.service.url)
    assert.equal(sample(text, 'campusgate_outbox_queued'), 1)
    assert.equal(sample(text, 'campusgate_outbox_oldest_queued_age_seconds'), 90)
    stack.service.mailWorker.start()
  })

  it('answers 503 not-ready when a migration is missing from the database', async () => {
    const db = stack.service.db.kysely
    const rows = await sql<{
      name: string
      timestamp: string
    }>`select name, timestamp from kysely_migration order by name desc`.execute(db)
    const latest = rows.rows[0]
    await sql`delete from kysely_migration where name = ${latest.name}`.execute(db)
    try {
      const response = await call(`${stack.service.url}/readyz`)
      assert.equal(response.status, 503)
      assert.equal(response.headers.get('content-type'), MEDIA_TYPE)
      assert.deepEqual(response.body, { error: '@service-unavailable/not-ready' })
      assert.deepEqual((await call(`${stack.service.url}/healthz`)).body, { status: 'ok' })
    } finally {
      await sql`insert into kysely_migration (name, timestamp) values (${latest.name}, ${latest.timestamp})`.execute(
        db,
      )
    }
    assert.equal((await call(`${stack.service.url}/readyz`)).status, 200)
  })
})

describe('readiness with the database unreachable', () => {
  it('answers 503 not-ready while /healthz stays 200', async () => {
    // Nothing listens on port 1: every connection attempt is refused.
    const config = loadConfig({
      PORT: '0',
      LOG_LEVEL: 'silent',
      DATABASE_URL: 'postgres://campusgate@127.0.0.1:1/nowhere',
    })
    const db = createDb(config.database.url, { poolSize: 1 })
    const { app } = await buildApp({
      config,
      db,
      clock: new TestClock(),
      cipher: cipherFor(config).cipher,
    })
    const url = await app.listen({ port: 0, host: '127.0.0.1' })
    try {
      const ready = await call(`${url}/readyz`)
      assert.equal(ready.status, 503)
      assert.deepEqual(ready.body, { error: '@service-unavailable/not-ready' })
      assert.equal((await call(`${url}/healthz`)).status, 200)
    } finally {
      await app.close()
      await db.kysely.destroy()
    }
  })
})

describe('metrics token and rate limits', () => {
  let service: RunningService

  before(async () => {
    service = await startService(
      { METRICS_TOKEN },
      { tweak: (config) => ({ ...config, rateLimit: { ...config.rateLimit, globalMax: 3 } }) },
    )
  })
  after(() => service.close())

  it('with METRICS_TOKEN set, /metrics needs Authorization: Bearer <token>', async () => {
    for (const authorization of [
      undefined,
      METRICS_TOKEN,
      'Bearer wrong-token-0123456789',
      'Bearer ',
    ]) {
      const response = await call(
        `${service.url}/metrics`,
        authorization === undefined ? {} : { headers: { authorization } },
      )
      assert.equal(response.status, 401, String(authorization))
      assert.equal(response.headers.get('content-type'), MEDIA_TYPE)
      assert.deepEqual(response.body, { error: '@unauthorized/invalid-metrics-token' })
    }
    await scrape(service.url, { authorization: `Bearer ${METRICS_TOKEN}` })
  })

  it('probes and scrapes are not counted per address; refusals are counted', async () => {
    for (let i = 0; i < 6; i += 1) {
      assert.equal((await call(`${service.url}/healthz`)).status, 200)
      assert.equal((await call(`${service.url}/readyz`)).status, 200)
    }
    const statuses = []
    for (let i = 0; i < 4; i += 1) statuses.push((await call(`${service.url}/session`)).status)
    assert.deepEqual(statuses, [403, 403, 403, 429])
    const text = await scrape(service.url, { authorization: `Bearer ${METRICS_TOKEN}` })
    assert.equal(sample(text, 'campusgate_rate_limit_refusals_total{limit="address"}'), 1)
  })
})
