// Seeds live sessions straight into campusgate's tables (schema from the service's own migrations,
// key hashes from its own hashSecret), so a million sessions take seconds, not a million
// registrations. Key i of a dataset is `salt + i` padded to 43 characters, the length of a real
// key; load.lua builds the same strings, so no key list has to be shipped to wrk.
import SQLite from 'better-sqlite3'
import pg from 'pg'
import type { Dist } from './dist.js'

export interface Dataset {
  readonly name: string
  readonly size: number
  /** 34 characters; with the 9-digit index a key is 43 characters long, like a real one. */
  readonly salt: string
  /**
   * Whether every session is due a touch (last written yesterday: the morning rush). Otherwise
   * the sessions count as touched a day ahead, so none is due until touches.ts makes a window of
   * them due for a run at steady touches.
   */
  readonly dueTouch: boolean
  /** Live sessions of each user (devices); 1 unless said. Users are `size / sessionsPerUser`. */
  readonly sessionsPerUser?: number
}

export function saltFor(name: string): string {
  return `bench_${name}_`.padEnd(34, 'x').slice(0, 34)
}

export function keyOf(dataset: Pick<Dataset, 'salt'>, index: number): string {
  return `${dataset.salt}${String(index).padStart(9, '0')}`
}

const DAY_MS = 86_400_000
interface Rows {
  /** [id, openId, linkedAt | null, createdAt, updatedAt] */
  users: unknown[][]
  /** [id, userId, keyHash, createdAt, expiresAt, touchedAt] */
  sessions: unknown[][]
  /** Each user's messenger identity id, by user index (the identities schema). */
  identityIds: string[]
  /** The university identity ids of the linked users, by user index (the identities schema). */
  universityIds: string[]
}

/**
 * Every row of a dataset, `sessionsPerUser` sessions a user, every tenth user linked (tier 2). The rows come
 * in the order of every index — sorted random UUIDs, sorted key hashes, open ids numbered in that
 * order — so inserting them appends to each B-tree instead of landing at random: a million rows
 * take seconds. The ids are still random UUIDs and which key owns which row is arbitrary.
 */
function rows(dist: Dist, dataset: Dataset, now: number): Rows {
  const touchedAt = dataset.dueTouch ? now - DAY_MS : now + DAY_MS
  const ids = (): string[] =>
    Array.from({ length: dataset.size }, () => dist.secrets.newId()).sort()
  const keyHashes = Array.from({ length: dataset.size }, (_, i) =>
    dist.secrets.hashSecret(keyOf(dataset, i)),
  ).sort()
  const perUser = dataset.sessionsPerUser ?? 1
  const userIds = ids().slice(0, Math.ceil(dataset.size / perUser))
  const sessionIds = ids()
  const identityIds = ids().slice(0, userIds.length)
  const universityIds = ids().slice(0, userIds.length)
  const out: Rows = { users: [], sessions: [], identityIds, universityIds }
  userIds.forEach((userId, u) => {
    const openId = `o-${dataset.name}-${String(u).padStart(9, '0')}`
    out.users.push([userId, openId, u % 10 === 9 ? now : null, now, now])
  })
  for (let r = 0; r < dataset.size; r += 1) {
    const userId = userIds[Math.floor(r / perUser)]
    out.sessions.push([sessionIds[r], userId, keyHashes[r], now, now + 29 * DAY_MS, touchedAt])
  }
  return out
}

// Encrypted columns stay empty: the key check reads neither; tier 2 is the link's time (on the
// user before migration 0015, on the person's university identity since).
const USER_COLUMNS = 'id, open_id, university_linked_at, created_at, updated_at'
const SESSION_COLUMNS = 'id, user_id, key_hash, created_at, expires_at, touched_at'
/** The seeded messenger identities' app, and the issuer of their university links. */
const BENCH_APP_ID = 'wx-bench-app'
const BENCH_ISSUER = 'https://idp.bench.example'

async function migrate(dist: Dist, url: string): Promise<void> {
  const db = dist.database.createDb(url, { poolSize: 2 })
  await dist.migrate.migrateToLatest(db)
  await db.kysely.destroy()
}

export async function seedSqlite(dist: Dist, path: string, dataset: Dataset): Promise<void> {
  await migrate(dist, `sqlite:${path}`)
  const db = new SQLite(path)
  db.pragma('synchronous = OFF')
  db.pragma('cache_size = -524288')
  // An earlier build's schema may have no expiry floor (migration 0012); where it has one, it is
  // the expiry, as the service writes it. Since migration 0015 a user is a person with identities.
  const columns = (table: string) =>
    (db.pragma(`table_info(${table})`) as { name: string }[]).map((column) => column.name)
  const floor = columns('sessions').includes('expiry_floor')
  const identities = columns('sessions').includes('identity_id')
  const all = rows(dist, dataset, Date.now())
  if (identities) {
    const person = db.prepare('INSERT INTO users (id, created_at, updated_at) VALUES (?, ?, ?)')
    const identity = db.prepare(`INSERT INTO identities (id, user_id, kind, provider, realm,
      subject, linked_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
    const session = db.prepare(`INSERT INTO sessions (${SESSION_COLUMNS}, expiry_floor,
      identity_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)
    const perUser = dataset.sessionsPerUser ?? 1
    db.transaction(() => {
      all.users.forEach(([id, openId, linkedAt, createdAt], u) => {
        person.run(id, createdAt, createdAt)
        identity.run(
          all.identityIds[u],
          id,
          'messenger',
          'wechat',
          BENCH_APP_ID,
          openId,
          null,
          createdAt,
          createdAt,
        )
        if (linkedAt !== null) {
          identity.run(
            all.universityIds[u],
            id,
            'university',
            'oidc',
            BENCH_ISSUER,
            `s-${String(openId)}`,
            linkedAt,
            createdAt,
            createdAt,
          )
        }
      })
      all.sessions.forEach((row, r) => {
        session.run(...row, row[4], all.identityIds[Math.floor(r / perUser)])
      })
    })()
  } else {
    const user = db.prepare(`INSERT INTO users (${USER_COLUMNS}) VALUES (?, ?, ?, ?, ?)`)
    const session = floor
      ? db.prepare(
          `INSERT INTO sessions (${SESSION_COLUMNS}, expiry_floor) VALUES (?, ?, ?, ?, ?, ?, ?)`,
        )
      : db.prepare(`INSERT INTO sessions (${SESSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)`)
    db.transaction(() => {
      for (const row of all.users) user.run(row)
      for (const row of all.sessions) session.run(floor ? [...row, row[4]] : row)
    })()
  }
  db.exec('ANALYZE')
  db.pragma('wal_checkpoint(TRUNCATE)')
  db.close()
}

/**
 * The same keys in a schema built for nothing but the key check: the SHA-256 as a 32-byte BLOB
 * primary key of a `WITHOUT ROWID` table (one B-tree descent finds the whole row) and an integer
 * join to users (their rowid). The key-check baseline reads it (baselines.ts `keycheck`).
 */
export function seedKeyCheckSqlite(dist: Dist, path: string, dataset: Dataset): void {
  const db = new SQLite(path)
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = OFF')
  db.exec(`CREATE TABLE users (id INTEGER PRIMARY KEY, open_id TEXT NOT NULL UNIQUE,
      university_linked_at INTEGER, created_at INTEGER NOT NULL);
    CREATE TABLE sessions (key_hash BLOB PRIMARY KEY, user_id INTEGER NOT NULL UNIQUE
      REFERENCES users (id), expires_at INTEGER NOT NULL, touched_at INTEGER NOT NULL)
      WITHOUT ROWID;`)
  const user = db.prepare('INSERT INTO users VALUES (?, ?, ?, ?)')
  const session = db.prepare('INSERT INTO sessions VALUES (?, ?, ?, ?)')
  const now = Date.now()
  const hashes = Array.from({ length: dataset.size }, (_, i) =>
    Buffer.from(dist.secrets.hashSecret(keyOf(dataset, i)), 'hex'),
  ).sort((a, b) => Buffer.compare(a, b))
  db.transaction(() => {
    hashes.forEach((hash, r) => {
      const openId = `o-${dataset.name}-${String(r).padStart(9, '0')}`
      user.run(r + 1, openId, r % 10 === 9 ? now : null, now)
      session.run(hash, r + 1, now + 29 * DAY_MS, now + DAY_MS)
    })
  })()
  // No ANALYZE: with its sqlite_stat4 samples, SQLite prepares a join on a bound key anew for
  // every new key (docs/performance.md). Without, this lookup is at its fastest.
  db.pragma('wal_checkpoint(TRUNCATE)')
  db.close()
}

/** A PostgreSQL URL whose connections use `schema` (campusgate's createDb honours it too). */
export function schemaUrl(baseUrl: string, schema: string): string {
  const url = new URL(baseUrl)
  url.searchParams.set('options', `-c search_path=${schema}`)
  return url.toString()
}

export async function seedPostgres(
  dist: Dist,
  baseUrl: string,
  schema: string,
  dataset: Dataset,
): Promise<void> {
  const admin = new pg.Client({ connectionString: baseUrl })
  await admin.connect()
  try {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    await admin.query(`CREATE SCHEMA ${schema}`)
  } finally {
    await admin.end()
  }
  const url = schemaUrl(baseUrl, schema)
  await migrate(dist, url)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    // Generated by the server itself: a million rows cost one statement, not a million messages.
    // Its SHA-256 must agree with hashSecret, which is checked on the first key.
    const hashOf = (index: string): string =>
      `encode(sha256(convert_to('${dataset.salt}' || lpad(${index}::text, 9, '0'), 'UTF8')), 'hex')`
    const { rows: check } = await client.query<{ hash: string }>(`SELECT ${hashOf('0')} AS hash`)
    if (check[0].hash !== dist.secrets.hashSecret(keyOf(dataset, 0))) {
      throw new Error(
        "the seeder's SHA-256 no longer matches hashSecret: update bench/harness/seed.ts",
      )
    }
    const now = Date.now()
    const touchedAt = dataset.dueTouch ? now - DAY_MS : now + DAY_MS
    await client.query('BEGIN')
    // As pg_restore --disable-triggers does: the rows are consistent by construction.
    await client.query('SET LOCAL session_replication_role = replica')
    // As for SQLite: sorted random ids and sorted key hashes paired by rank, inserted in that
    // order, so every index is appended to.
    const sortedIds = (
      name: string,
      count: number,
    ): string => `${name} AS (SELECT id, row_number() OVER (ORDER BY id) AS r
      FROM (SELECT gen_random_uuid()::text AS id FROM generate_series(1, ${count})) AS g)`
    const perUser = dataset.sessionsPerUser ?? 1
    const users = Math.ceil(dataset.size / perUser)
    await client.query(`CREATE TEMP TABLE seed_users ON COMMIT DROP AS
      WITH ${sortedIds('user_ids', users)} SELECT id, r FROM user_ids`)
    await client.query(`CREATE TEMP TABLE seed ON COMMIT DROP AS
      WITH keys AS (SELECT key_hash, row_number() OVER (ORDER BY key_hash) AS r
          FROM (SELECT ${hashOf('i')} AS key_hash
            FROM generate_series(0, ${dataset.size - 1}) AS i) AS g),
        ${sortedIds('session_ids', dataset.size)}
      SELECT keys.r, seed_users.id AS user_id, session_ids.id AS session_id, keys.key_hash
      FROM keys JOIN session_ids USING (r)
        JOIN seed_users ON seed_users.r = (keys.r - 1) / ${perUser} + 1`)
    const hasColumn = async (column: string): Promise<boolean> => {
      const { rowCount } = await client.query(`SELECT 1 FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = 'sessions'
          AND column_name = '${column}'`)
      return (rowCount ?? 0) > 0
    }
    const floor = await hasColumn('expiry_floor')
    // Since migration 0015 a user is a person with identities, each session naming its own.
    const identities = await hasColumn('identity_id')
    const openId = `'o-${dataset.name}-' || lpad(r::text, 9, '0')`
    if (identities) {
      await client.query(`ALTER TABLE seed_users ADD COLUMN identity_id text`)
      await client.query(`UPDATE seed_users SET identity_id = gen_random_uuid()::text`)
      await client.query(`INSERT INTO users (id, created_at, updated_at)
        SELECT id, ${now}, ${now} FROM seed_users ORDER BY r`)
      await client.query(`INSERT INTO identities (id, user_id, kind, provider, realm, subject,
          created_at, updated_at)
        SELECT identity_id, id, 'messenger', 'wechat', '${BENCH_APP_ID}', ${openId}, ${now}, ${now}
        FROM seed_users ORDER BY r`)
      await client.query(`INSERT INTO identities (id, user_id, kind, provider, realm, subject,
          linked_at, created_at, updated_at)
        SELECT gen_random_uuid()::text, id, 'university', 'oidc', '${BENCH_ISSUER}',
          's-' || ${openId}, ${now}, ${now}, ${now}
        FROM seed_users WHERE r % 10 = 9 ORDER BY r`)
    } else {
      await client.query(`INSERT INTO users (${USER_COLUMNS})
        SELECT id, ${openId}, CASE WHEN r % 10 = 9 THEN ${now} END, ${now}, ${now}
        FROM seed_users ORDER BY r`)
    }
    const expiresAt = now + 29 * DAY_MS
    await client.query(`INSERT INTO sessions (${SESSION_COLUMNS}${floor ? ', expiry_floor' : ''}
        ${identities ? ', identity_id' : ''})
      SELECT session_id, seed.user_id, key_hash, ${now}, ${expiresAt}, ${touchedAt}
        ${floor ? `, ${expiresAt}` : ''} ${identities ? ', seed_users.identity_id' : ''}
      FROM seed JOIN seed_users ON seed_users.id = seed.user_id ORDER BY seed.r`)
    await client.query('COMMIT')
    // Vacuumed, frozen and written out now, so neither autovacuum nor the first reads' hint-bit
    // writes of a million fresh rows run in the background of the measured rounds.
    await client.query(
      `VACUUM (FREEZE, ANALYZE) users, sessions${identities ? ', identities' : ''}`,
    )
    await client.query('CHECKPOINT').catch(() => undefined) // superusers and pg_checkpoint only
  } finally {
    await client.end()
  }
}

export async function dropPostgresSchemas(baseUrl: string, schemas: string[]): Promise<void> {
  const admin = new pg.Client({ connectionString: baseUrl })
  await admin.connect()
  try {
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  } finally {
    await admin.end()
  }
}
