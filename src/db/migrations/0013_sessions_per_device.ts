import { PostgresAdapter, sql, type Kysely } from 'kysely'

/**
 * Sessions per device (docs/sessions.md, "Devices"): a user may hold several live sessions, so `user_id` is
 * no longer unique, and each session keeps the `User-Agent` of the request that registered it as
 * its device label. Every existing row stays as it is: every key issued before keeps working.
 *
 * `user_id` keeps an index of its own (a user's sessions are listed, counted against the cap and
 * ended together). `touched_at` gets none: a touch must write no indexed column (migration 0012).
 */
export async function up(db: Kysely<any>): Promise<void> {
  if (isPostgres(db)) {
    const { rows } = await sql<{ name: string }>`
      SELECT con.conname AS name
      FROM pg_constraint con
      JOIN pg_attribute att ON att.attrelid = con.conrelid AND att.attnum = ANY(con.conkey)
      WHERE con.conrelid = 'sessions'::regclass AND con.contype = 'u'
        AND array_length(con.conkey, 1) = 1 AND att.attname = 'user_id'`.execute(db)
    for (const { name } of rows) {
      await sql`ALTER TABLE sessions DROP CONSTRAINT ${sql.id(name)}`.execute(db)
    }
    await db.schema.alterTable('sessions').addColumn('device', 'text').execute()
  } else {
    // SQLite cannot drop a column's UNIQUE: the table is rebuilt, as SQLite's ALTER TABLE page
    // describes. Nothing references `sessions`, so it can be dropped and renamed in place.
    await rebuildSqliteSessions(db, { oneUserPerRow: false })
  }
  await db.schema.createIndex('sessions_user_id').on('sessions').column('user_id').execute()
}

/** Back to one session per user: of each user's sessions, the most recently used one stays. */
export async function down(db: Kysely<any>): Promise<void> {
  await sql`
    DELETE FROM sessions WHERE id IN (
      SELECT id FROM (
        SELECT id, ROW_NUMBER() OVER (
          PARTITION BY user_id ORDER BY touched_at DESC, created_at DESC, id
        ) AS place
        FROM sessions
      ) ranked WHERE place > 1
    )`.execute(db)
  await db.schema.dropIndex('sessions_user_id').execute()
  if (isPostgres(db)) {
    await db.schema.alterTable('sessions').dropColumn('device').execute()
    await sql`ALTER TABLE sessions ADD CONSTRAINT sessions_user_id_key UNIQUE (user_id)`.execute(db)
    return
  }
  await rebuildSqliteSessions(db, { oneUserPerRow: true })
}

function isPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter
}

/**
 * SQLite: `sessions` made anew with every row kept, `user_id` unique or not (the device column
 * only where it is not), and the indexes of migrations 0009 and 0012 made again.
 */
async function rebuildSqliteSessions(
  db: Kysely<any>,
  { oneUserPerRow }: { oneUserPerRow: boolean },
): Promise<void> {
  let table = db.schema
    .createTable('sessions_rebuilt')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('user_id', 'text', (col) => {
      const user = col.notNull().references('users.id').onDelete('cascade')
      return oneUserPerRow ? user.unique() : user
    })
    .addColumn('key_hash', 'text', (col) => col.notNull().unique())
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addColumn('expires_at', 'bigint', (col) => col.notNull())
    .addColumn('touched_at', 'bigint', (col) => col.notNull())
    .addColumn('expiry_floor', 'bigint', (col) => col.notNull().defaultTo(0))
  if (!oneUserPerRow) table = table.addColumn('device', 'text')
  await table.execute()
  await sql`
    INSERT INTO sessions_rebuilt
      (id, user_id, key_hash, created_at, expires_at, touched_at, expiry_floor)
    SELECT id, user_id, key_hash, created_at, expires_at, touched_at, expiry_floor
    FROM sessions`.execute(db)
  await db.schema.dropTable('sessions').execute()
  await db.schema.alterTable('sessions_rebuilt').renameTo('sessions').execute()
  await db.schema.createIndex('sessions_created_at').on('sessions').column('created_at').execute()
  await db.schema
    .createIndex('sessions_expiry_floor')
    .on('sessions')
    .column('expiry_floor')
    .execute()
}
