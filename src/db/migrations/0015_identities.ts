import { PostgresAdapter, sql, type Kysely, type RawBuilder } from 'kysely'

/**
 * One user per person, one identity per way a provider knows them (docs/identities.md). Until
 * now a user was one WeChat openId, with its messenger session key and its university link on the
 * row; they move into `identities`:
 *
 * - each user's openId becomes a messenger identity (`kind` messenger, platform `wechat`), with its
 *   unionid and its encrypted session key. The app it came from was never recorded: its `realm`
 *   (the appId) is '' until the first registration from an app claims it (identities/store.ts);
 * - each user's university link (or the identity it proved, once the link lapsed or was
 *   nullified) becomes a university identity, the same values in the same columns, its protocol
 *   unrecorded ('') and its issuer the `realm`;
 * - each session names the identity it was registered with (`identity_id`): the openId a key
 *   answers with is the identity's, so every key says what it said before.
 *
 * `users` keeps the person only. This is the last migration that moves or drops a column the
 * release before it reads (docs/operations.md, "Upgrades and rollbacks"): the release before it
 * cannot serve a newer schema, and goes back only after `campusgate migrate --to
 * 0014_console_roles`, whose way back (`down`) puts every identity back on a user of its own.
 */
export async function up(db: Kysely<any>): Promise<void> {
  const postgres = isPostgres(db)
  if (!postgres) {
    // SQLite rebuilds `users` (it cannot drop a UNIQUE column), which three tables reference:
    // foreign keys are off while it does, in one transaction (SQLite's ALTER TABLE page).
    await sql`PRAGMA foreign_keys = OFF`.execute(db)
    await sql`BEGIN IMMEDIATE`.execute(db)
  }
  try {
    await createIdentities(db)
    await sql`
      INSERT INTO identities
        (id, user_id, kind, provider, realm, subject, union_id, secret, created_at, updated_at)
      SELECT ${newUuid(postgres)}, id, 'messenger', 'wechat', '', open_id, union_id,
        messenger_session_key, created_at, updated_at
      FROM users`.execute(db)
    await sql`
      INSERT INTO identities
        (id, user_id, kind, provider, realm, subject, secret, email, name, is_student, linked_at,
         binding, created_at, updated_at)
      SELECT ${newUuid(postgres)}, id, 'university', '', COALESCE(university_issuer, ''),
        university_subject, university_token, university_email, university_name,
        university_is_student, university_linked_at, university_binding,
        COALESCE(university_linked_at, updated_at), updated_at
      FROM users
      WHERE university_linked_at IS NOT NULL OR university_token IS NOT NULL
        OR university_subject IS NOT NULL OR university_email IS NOT NULL
        OR university_issuer IS NOT NULL`.execute(db)
    // No foreign key: SQLite could not drop the column again, and an identity goes only with its
    // user, whose sessions go with it.
    await db.schema.alterTable('sessions').addColumn('identity_id', 'text').execute()
    await sql`
      UPDATE sessions SET identity_id = (
        SELECT identities.id FROM identities
        WHERE identities.user_id = sessions.user_id AND identities.kind = 'messenger'
      )`.execute(db)
    if (postgres) {
      await sql`ALTER TABLE users
        DROP COLUMN open_id, DROP COLUMN union_id, DROP COLUMN messenger_session_key,
        DROP COLUMN university_token, DROP COLUMN university_linked_at,
        DROP COLUMN university_issuer, DROP COLUMN university_subject,
        DROP COLUMN university_email, DROP COLUMN university_name,
        DROP COLUMN university_is_student, DROP COLUMN university_binding`.execute(db)
    } else {
      await sql`CREATE TABLE users_person (
        id text PRIMARY KEY, created_at bigint NOT NULL, updated_at bigint NOT NULL)`.execute(db)
      await sql`INSERT INTO users_person (id, created_at, updated_at)
        SELECT id, created_at, updated_at FROM users`.execute(db)
      await sql`DROP TABLE users`.execute(db)
      await sql`ALTER TABLE users_person RENAME TO users`.execute(db)
      await checkForeignKeys(db)
      await sql`COMMIT`.execute(db)
    }
  } catch (error) {
    if (!postgres) await sql`ROLLBACK`.execute(db).catch(() => undefined)
    throw error
  } finally {
    if (!postgres) await sql`PRAGMA foreign_keys = ON`.execute(db)
  }
}

/**
 * Back to one openId per user. A person with several messenger identities keeps the oldest; each
 * other becomes a user of its own (its id the identity's), with its own sessions; the university
 * identity stays with the person. An identity whose openId an older one holds (the same openId in
 * two apps or on two platforms, which the old schema cannot tell apart) goes with its sessions.
 */
export async function down(db: Kysely<any>): Promise<void> {
  const postgres = isPostgres(db)
  if (!postgres) {
    await sql`PRAGMA foreign_keys = OFF`.execute(db)
    await sql`BEGIN IMMEDIATE`.execute(db)
  }
  try {
    // Each messenger identity kept, and the user it is the openId of.
    await sql`CREATE TABLE identities_owned AS
      SELECT id AS identity_id, CASE WHEN place_in_user = 1 THEN user_id ELSE id END AS owner,
        place_in_user, subject, union_id, secret, created_at, updated_at
      FROM (
        SELECT id, user_id, subject, union_id, secret, created_at, updated_at,
          ROW_NUMBER() OVER (PARTITION BY user_id ORDER BY created_at, id) AS place_in_user,
          ROW_NUMBER() OVER (PARTITION BY subject ORDER BY created_at, id) AS place_of_subject
        FROM identities WHERE kind = 'messenger'
      ) placed
      WHERE place_of_subject = 1`.execute(db)
    await sql`INSERT INTO users (id, created_at, updated_at)
      SELECT owner, created_at, updated_at FROM identities_owned WHERE place_in_user > 1`.execute(
      db,
    )
    await sql`DELETE FROM sessions
      WHERE identity_id IS NULL OR identity_id NOT IN (SELECT identity_id FROM identities_owned)`.execute(
      db,
    )
    await sql`UPDATE sessions SET user_id = identities_owned.owner FROM identities_owned
      WHERE identities_owned.identity_id = sessions.identity_id
        AND identities_owned.place_in_user > 1`.execute(db)
    // A person none of whose openIds is kept goes, with what is theirs (foreign keys are off on
    // SQLite, so nothing cascades by itself).
    for (const table of ['registration_codes', 'university_attempts', 'sessions', 'identities']) {
      await sql`DELETE FROM ${sql.table(table)}
        WHERE user_id NOT IN (SELECT owner FROM identities_owned)`.execute(db)
    }
    await sql`DELETE FROM users WHERE id NOT IN (SELECT owner FROM identities_owned)`.execute(db)
    await db.schema.alterTable('sessions').dropColumn('identity_id').execute()
    if (postgres) {
      await sql`ALTER TABLE users
        ADD COLUMN open_id text, ADD COLUMN union_id text, ADD COLUMN university_linked_at bigint,
        ADD COLUMN messenger_session_key text, ADD COLUMN university_token text,
        ADD COLUMN university_issuer text, ADD COLUMN university_subject text,
        ADD COLUMN university_email text, ADD COLUMN university_name text,
        ADD COLUMN university_binding text, ADD COLUMN university_is_student integer`.execute(db)
      await sql`UPDATE users SET open_id = o.subject, union_id = o.union_id,
          messenger_session_key = o.secret
        FROM identities_owned o WHERE o.owner = users.id`.execute(db)
      await sql`UPDATE users SET university_linked_at = u.linked_at, university_token = u.secret,
          university_issuer = NULLIF(u.realm, ''), university_subject = u.subject,
          university_email = u.email, university_name = u.name, university_binding = u.binding,
          university_is_student = u.is_student
        FROM identities u WHERE u.user_id = users.id AND u.kind = 'university'`.execute(db)
      await sql`ALTER TABLE users ALTER COLUMN open_id SET NOT NULL`.execute(db)
      await sql`ALTER TABLE users ADD CONSTRAINT users_open_id_key UNIQUE (open_id)`.execute(db)
    } else {
      // The table as migrations 0001 to 0014 left it, column for column.
      await sql`CREATE TABLE users_with_identity ("id" text primary key,
        "open_id" text not null unique, "union_id" text, "university_linked_at" bigint,
        "created_at" bigint not null, "updated_at" bigint not null,
        "messenger_session_key" text, "university_token" text, "university_issuer" text,
        "university_subject" text, "university_email" text, "university_name" text,
        "university_binding" text, "university_is_student" integer)`.execute(db)
      await sql`INSERT INTO users_with_identity
        SELECT users.id, o.subject, o.union_id, u.linked_at, users.created_at, users.updated_at,
          o.secret, u.secret, NULLIF(u.realm, ''), u.subject, u.email, u.name, u.binding,
          u.is_student
        FROM users JOIN identities_owned o ON o.owner = users.id
        LEFT JOIN identities u ON u.user_id = users.id AND u.kind = 'university'`.execute(db)
      await sql`DROP TABLE users`.execute(db)
      await sql`ALTER TABLE users_with_identity RENAME TO users`.execute(db)
    }
    await db.schema.dropTable('identities_owned').execute()
    await db.schema.dropTable('identities').execute()
    await db.schema
      .createIndex('users_university_binding')
      .on('users')
      .column('university_binding')
      .unique()
      .execute()
    await db.schema
      .createIndex('users_university_linked_at')
      .on('users')
      .column('university_linked_at')
      .execute()
    if (!postgres) {
      await checkForeignKeys(db)
      await sql`COMMIT`.execute(db)
    }
  } catch (error) {
    if (!postgres) await sql`ROLLBACK`.execute(db).catch(() => undefined)
    throw error
  } finally {
    if (!postgres) await sql`PRAGMA foreign_keys = ON`.execute(db)
  }
}

async function createIdentities(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('identities')
    .addColumn('id', 'text', (col) => col.primaryKey())
    .addColumn('user_id', 'text', (col) => col.notNull().references('users.id').onDelete('cascade'))
    .addColumn('kind', 'text', (col) => col.notNull())
    .addColumn('provider', 'text', (col) => col.notNull())
    .addColumn('realm', 'text', (col) => col.notNull())
    .addColumn('subject', 'text')
    .addColumn('union_id', 'text')
    .addColumn('secret', 'text')
    .addColumn('email', 'text')
    .addColumn('name', 'text')
    .addColumn('is_student', 'integer')
    .addColumn('linked_at', 'bigint')
    .addColumn('binding', 'text')
    .addColumn('created_at', 'bigint', (col) => col.notNull())
    .addColumn('updated_at', 'bigint', (col) => col.notNull())
    .execute()
  // A platform's app knows a person by one openId; a person holds one university identity.
  await db.schema
    .createIndex('identities_messenger')
    .on('identities')
    .columns(['provider', 'realm', 'subject'])
    .unique()
    .where(sql.ref('kind'), '=', 'messenger')
    .execute()
  await db.schema
    .createIndex('identities_university')
    .on('identities')
    .column('user_id')
    .unique()
    .where(sql.ref('kind'), '=', 'university')
    .execute()
  await db.schema.createIndex('identities_user_id').on('identities').column('user_id').execute()
  await db.schema
    .createIndex('identities_union_id')
    .on('identities')
    .columns(['provider', 'union_id'])
    .where(sql.ref('union_id'), 'is not', null)
    .execute()
  // Exclusive binding: one university identity gives tier 2 to one person at a time.
  await db.schema
    .createIndex('identities_binding')
    .on('identities')
    .column('binding')
    .unique()
    .execute()
  await db.schema
    .createIndex('identities_linked_at')
    .on('identities')
    .column('linked_at')
    .where(sql.ref('linked_at'), 'is not', null)
    .execute()
}

/** A random UUID (v4) per row, in the database's own SQL. */
function newUuid(postgres: boolean): RawBuilder<string> {
  if (postgres) return sql<string>`gen_random_uuid()::text`
  return sql<string>`lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' ||
    substr(hex(randomblob(2)), 2) || '-' || substr('89ab', 1 + (abs(random()) % 4), 1) ||
    substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))`
}

/** SQLite: nothing points at a row that is not there, or the rebuild is undone. */
async function checkForeignKeys(db: Kysely<any>): Promise<void> {
  const { rows } = await sql<{ table: string }>`PRAGMA foreign_key_check`.execute(db)
  if (rows.length > 0) {
    throw new Error(`migration 0015: rows of ${rows[0]?.table} point at missing rows`)
  }
}

function isPostgres(db: Kysely<any>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter
}
