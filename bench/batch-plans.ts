// npm run bench:plans: what PostgreSQL's backend spends on each of the key check's two batched
// statements (src/sessions/store-postgres.ts): the read of a turn's key checks and the write of a
// turn's touches. Each runs as campusgate binds it, its arrays through subqueries and prepared by
// name (one generic plan after five executions), beside the same text with its arrays bound bare
// (planned anew on every execution); the touches also unnamed (parsed too on every execution, as
// they ran while their text held a `*`: src/db/statements.ts). The statements' text comes from
// this build's dist/, so the bench measures what the service runs. Campusgate's schema from its
// migrations, seeded as the bench seeds it; one connection. Every touch writes (each is bound the
// `touched_at` its session holds), as a due touch does. Prints, per statement, form and batch
// size, the backend's CPU per execution (from /proc, so PostgreSQL must run on this machine) and
// the round trip, the median of 5 rounds, and the plans PostgreSQL kept.
// Environment: BENCH_POSTGRES_URL, PLANS_SIZE (sessions, default 10000).
import pg from 'pg'
import { loadDist, loadKeyCheckStatements } from './harness/dist.js'
import { cpuSecondsOf } from './harness/processes.js'
import { median } from './harness/report.js'
import { dropPostgresSchemas, keyOf, saltFor, schemaUrl, seedPostgres } from './harness/seed.js'

const baseUrl = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const size = Number(process.env.PLANS_SIZE ?? 10_000)
const ROUNDS = 5
const READ_BATCHES = [1, 2, 4, 8, 16]
const TOUCH_BATCHES = [2, 4, 8]
const DAY_MS = 86_400_000

/** The statement with each array bound bare: `(SELECT $1::text[])` becomes `$1::text[]`. */
const bare = (text: string): string => text.replace(/\(SELECT (\$\d+)::(\w+)\[\]\)/g, '$1::$2[]')

interface Form {
  readonly name: string
  readonly text: string
  /** The name it is prepared under, or undefined to run it unnamed. */
  readonly prepared: string | undefined
}
const form = (name: string, text: string, prepared: boolean): Form => ({
  name,
  text,
  prepared: prepared ? name.replace(/\W+/g, '_') : undefined,
})

const dist = await loadDist()
const { postgres: statements } = await loadKeyCheckStatements()
const schema = `bench_plans_${process.pid}`
const url = schemaUrl(baseUrl, schema)
const dataset = { name: 'plans', size, salt: saltFor('plans'), dueTouch: false }
await seedPostgres(dist, baseUrl, schema, dataset)
const keyHashes = Array.from({ length: size }, (_, i) => dist.secrets.hashSecret(keyOf(dataset, i)))

// Only to compile the statements as the service does.
const compiler = dist.database.createDb(url, { poolSize: 1 })
const readText = statements.sessionsByKeyHashes.bind(compiler.kysely, []).sql
const touchText = statements.touchesAndMarks.bind(compiler.kysely, [], [], [], [], [], []).sql
await compiler.kysely.destroy()
const READS = [
  form('read, subquery', readText, true),
  form('read, bare array', bare(readText), true),
]
const TOUCHES = [
  form('touches, subqueries', touchText, true),
  form('touches, bare arrays', bare(touchText), true),
  form('touches, bare arrays, unnamed', bare(touchText), false),
]

const client = new pg.Client({ connectionString: url })
await client.connect()
try {
  const { rows: backend } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')
  /** The backend's CPU so far, in µs. */
  const cpu = (): number => cpuSecondsOf(backend[0].pid) * 1_000_000
  const { rows: sessions } = await client.query<{
    id: string
    user_id: string
    touched_at: string
  }>('SELECT id, user_id, touched_at FROM sessions')
  const touchedAt = sessions.map((session) => Number(session.touched_at))
  const pick = (count: number): number[] => {
    const picked = new Set<number>()
    while (picked.size < count) picked.add(Math.floor(Math.random() * size))
    return [...picked]
  }

  const readValues = (batch: number): unknown[] => [pick(batch).map((i) => keyHashes[i])]
  const touchValues = (batch: number): unknown[] => {
    const due = pick(batch)
    const values = [
      due.map((i) => sessions[i].id),
      due.map((i) => sessions[i].user_id),
      due.map((i) => touchedAt[i] + 1 + 30 * DAY_MS),
      due.map((i) => touchedAt[i] + 1),
      due.map((i) => touchedAt[i]),
      due.map(() => null),
    ]
    for (const i of due) touchedAt[i] += 1
    return values
  }

  const execute = async (
    { text, prepared }: Form,
    values: unknown[],
    expectRows: number | null,
  ): Promise<void> => {
    const { rows } = await client.query(
      prepared === undefined ? { text, values } : { name: prepared, text, values },
    )
    if (expectRows !== null && rows.length !== expectRows) {
      throw new Error(`${rows.length} touches written of ${expectRows}: the bench lost track`)
    }
  }
  const measure = async (
    forms: Form[],
    batches: number[],
    executions: number,
    values: (batch: number) => unknown[],
    writes: boolean,
  ): Promise<Record<string, string>[]> => {
    const run = async (one: Form, batch: number): Promise<{ cpu: number; trip: number }> => {
      const cpuBefore = cpu()
      const started = process.hrtime.bigint()
      for (let n = 0; n < executions; n += 1) {
        await execute(one, values(batch), writes ? batch : null)
      }
      return {
        cpu: (cpu() - cpuBefore) / executions,
        trip: Number(process.hrtime.bigint() - started) / 1_000 / executions,
      }
    }
    for (const one of forms) await run(one, 2) // prepared, and past the five custom plans
    const table: Record<string, string>[] = []
    for (const batch of batches) {
      const runs = new Map(forms.map((one) => [one, [] as { cpu: number; trip: number }[]]))
      // Interleaved, so a slow spell of the machine hits every form.
      for (let round = 0; round < ROUNDS; round += 1) {
        for (const one of forms) runs.get(one)!.push(await run(one, batch))
      }
      for (const one of forms) {
        const measured = runs.get(one)!
        table.push({
          form: one.name,
          batch: String(batch),
          'backend CPU µs/execution': median(measured.map((m) => m.cpu)).toFixed(0),
          'round trip µs': median(measured.map((m) => m.trip)).toFixed(0),
        })
      }
    }
    return table
  }

  console.log(`PostgreSQL, ${size} sessions, one connection, median of ${ROUNDS} rounds`)
  console.log('The read of a turn’s key checks, 5,000 executions a round:')
  console.table(await measure(READS, READ_BATCHES, 5_000, readValues, false))
  console.log('The write of a turn’s touches, 1,000 executions a round:')
  console.table(await measure(TOUCHES, TOUCH_BATCHES, 1_000, touchValues, true))
  const plans = await client.query(
    `SELECT name, generic_plans, custom_plans FROM pg_prepared_statements WHERE name = ANY($1)`,
    [[...READS, ...TOUCHES].flatMap((one) => one.prepared ?? [])],
  )
  console.table(plans.rows)
} finally {
  await client.end()
  await dropPostgresSchemas(baseUrl, [schema])
}
