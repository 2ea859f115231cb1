// npm run bench:plans: what PostgreSQL's backend spends on one batched key-check read, with the
// key hashes bound as a bare array (`= ANY($1)`, planned anew on every execution) and through a
// subquery (`= ANY((SELECT $1::text[])::text[])`, one generic plan after five executions;
// src/sessions/store-postgres.ts). Campusgate's schema from its migrations, seeded as the bench
// seeds it; one connection, statements named as campusgate names them. Prints, per form and batch
// size, the backend's CPU per execution (from /proc, so PostgreSQL must run on this machine) and
// the round trip, the median of 5 rounds of 5,000, and the plans PostgreSQL kept.
// Environment: BENCH_POSTGRES_URL, PLANS_SIZE (sessions, default 10000).
import pg from 'pg'
import { loadDist } from './harness/dist.js'
import { cpuSecondsOf } from './harness/processes.js'
import { median } from './harness/report.js'
import { dropPostgresSchemas, keyOf, saltFor, schemaUrl, seedPostgres } from './harness/seed.js'

const baseUrl = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const size = Number(process.env.PLANS_SIZE ?? 10_000)
const ROUNDS = 5
const READS = 5_000
const BATCH_SIZES = [1, 2, 4, 8, 16]

const SELECT = `SELECT s.id, s.user_id, s.created_at, s.expires_at, s.touched_at, s.device, u.open_id,
  u.university_linked_at, u.university_subject, u.university_email, u.university_name,
  u.university_is_student, s.key_hash FROM sessions s INNER JOIN users u ON u.id = s.user_id
  WHERE s.key_hash = `
const FORMS = {
  'bare array': `${SELECT}ANY($1)`,
  subquery: `${SELECT}ANY((SELECT $1::text[])::text[])`,
} as const
type Form = keyof typeof FORMS

const dist = await loadDist()
const schema = `bench_plans_${process.pid}`
const dataset = { name: 'plans', size, salt: saltFor('plans'), dueTouch: false }
await seedPostgres(dist, baseUrl, schema, dataset)
const keyHashes = Array.from({ length: size }, (_, i) => dist.secrets.hashSecret(keyOf(dataset, i)))

const client = new pg.Client({ connectionString: schemaUrl(baseUrl, schema) })
await client.connect()
try {
  const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
  /** The backend's CPU so far, in µs. */
  const cpu = (): number => cpuSecondsOf(rows[0].pid) * 1_000_000
  const run = async (form: Form, batch: number): Promise<{ cpu: number; trip: number }> => {
    const cpuBefore = cpu()
    const started = process.hrtime.bigint()
    for (let read = 0; read < READS; read += 1) {
      const values = Array.from(
        { length: batch },
        () => keyHashes[Math.floor(Math.random() * size)],
      )
      await client.query({ name: form, text: FORMS[form], values: [values] })
    }
    return {
      cpu: (cpu() - cpuBefore) / READS,
      trip: Number(process.hrtime.bigint() - started) / 1_000 / READS,
    }
  }
  const forms = Object.keys(FORMS) as Form[]
  for (const form of forms) await run(form, 2) // prepared, and past the five custom plans
  const table: Record<string, string>[] = []
  for (const batch of BATCH_SIZES) {
    const runs = new Map(forms.map((form) => [form, [] as { cpu: number; trip: number }[]]))
    // Interleaved, so a slow spell of the machine hits both forms.
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const form of forms) runs.get(form)!.push(await run(form, batch))
    }
    for (const form of forms) {
      const measured = runs.get(form)!
      table.push({
        form,
        'key hashes': String(batch),
        'backend CPU µs/read': median(measured.map((m) => m.cpu)).toFixed(0),
        'round trip µs': median(measured.map((m) => m.trip)).toFixed(0),
      })
    }
  }
  console.log(`PostgreSQL, ${size} sessions, one connection, median of ${ROUNDS} × ${READS} reads`)
  console.table(table)
  const plans = await client.query(
    `SELECT name, generic_plans, custom_plans FROM pg_prepared_statements WHERE name = ANY($1)`,
    [forms],
  )
  console.table(plans.rows)
} finally {
  await client.end()
  await dropPostgresSchemas(baseUrl, [schema])
}
