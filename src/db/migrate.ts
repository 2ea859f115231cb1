import {
  DEFAULT_MIGRATION_TABLE,
  Migrator,
  sql,
  type Migration,
  type MigrationProvider,
  type MigrationResultSet,
} from 'kysely'
import type { Db } from './database.js'
import * as m0001 from './migrations/0001_initial.js'
import * as m0002 from './migrations/0002_job_leases.js'
import * as m0003 from './migrations/0003_mail_owner.js'
import * as m0004 from './migrations/0004_secrets_at_rest.js'
import * as m0005 from './migrations/0005_oidc_university_identity.js'
import * as m0006 from './migrations/0006_ops_audit_events.js'
import * as m0008 from './migrations/0008_webhook_events.js'
import * as m0009 from './migrations/0009_sessions_created_at.js'
import * as m0010 from './migrations/0010_user_active_days.js'
import * as m0011 from './migrations/0011_console.js'
import * as m0012 from './migrations/0012_sessions_expiry_floor.js'
import * as m0013 from './migrations/0013_sessions_per_device.js'
import * as m0014 from './migrations/0014_console_roles.js'
import * as m0015 from './migrations/0015_identities.js'
import * as m0017 from './migrations/0017_saml_assertions.js'
import * as m0018 from './migrations/0018_console_list_indexes.js'
import * as m0019 from './migrations/0019_user_suspension.js'
import * as m0020 from './migrations/0020_webhook_first_try.js'

// Migrations are imported, not read from a folder, so the same list works from src/ under tsx and
// from dist/ after the build.
const MIGRATIONS: Record<string, Migration> = {
  '0001_initial': m0001,
  '0002_job_leases': m0002,
  '0003_mail_owner': m0003,
  '0004_secrets_at_rest': m0004,
  '0005_oidc_university_identity': m0005,
  '0006_ops_audit_events': m0006,
  '0008_webhook_events': m0008,
  '0009_sessions_created_at': m0009,
  '0010_user_active_days': m0010,
  '0011_console': m0011,
  '0012_sessions_expiry_floor': m0012,
  '0013_sessions_per_device': m0013,
  '0014_console_roles': m0014,
  '0015_identities': m0015,
  '0017_saml_assertions': m0017,
  '0018_console_list_indexes': m0018,
  '0019_user_suspension': m0019,
  '0020_webhook_first_try': m0020,
}

/** Every migration this build knows, for Kysely's `Migrator`. */
const migrationProvider: MigrationProvider = {
  getMigrations: () => Promise.resolve(MIGRATIONS),
}

/** How often a move of the migrator that met another client's DDL is tried (`metOthersDdl`). */
const MIGRATION_ATTEMPTS = 10

/** Kysely's migrator over this build's migrations, its tables in the database's own schema. */
function migratorFor(db: Db): Migrator {
  return new Migrator({
    db: db.kysely,
    provider: migrationProvider,
    ...(db.schema === null ? {} : { migrationTableSchema: db.schema }),
  })
}

/** Brings the schema to the latest version; safe to run from several instances at once. */
export function migrateToLatest(db: Db): Promise<string[]> {
  return move(db, (migrator) => migrator.migrateToLatest())
}

/** Brings the schema up or down to the named migration (tests of a migration's way back). */
export function migrateTo(db: Db, name: string): Promise<string[]> {
  return move(db, (migrator) => migrator.migrateTo(name))
}

/** What a start did to the schema: the migrations it applied, those of a newer build it found. */
export interface StartMigrations {
  applied: string[]
  /** Applied migrations this build does not know (a newer release's), oldest name first. */
  unknown: string[]
}

/** The migrations this build knows, oldest first. */
export function knownMigrations(): string[] {
  return Object.keys(MIGRATIONS).sort()
}

/**
 * The migrations of a start (`campusgate serve`, `campusgate migrate`). A database that already
 * holds migrations this build does not know belongs to a newer release, whose migrations are
 * expand-only: this build applies nothing and serves, as long as every migration it knows is
 * applied (docs/operations.md, "Upgrades and rollbacks"). Kysely's migrator would refuse such a
 * database ("corrupted migrations"), so it is not asked.
 */
export async function migrateForStart(db: Db): Promise<StartMigrations> {
  let state = await migrationState(db)
  if (state.unknown.length === 0) {
    try {
      return { applied: await migrateToLatest(db), unknown: [] }
    } catch (error) {
      // A newer instance migrated between the look and the lock: look again.
      state = await migrationState(db)
      if (state.unknown.length === 0) throw error
    }
  }
  if (state.pending.length > 0) {
    throw new Error(
      `the database holds migrations this build does not know (${state.unknown.join(', ')}) ` +
        `and lacks ones it needs (${state.pending.join(', ')}): run the release that applied ` +
        `them, or take the schema back with its campusgate migrate --to`,
    )
  }
  return { applied: [], unknown: state.unknown }
}

/**
 * `campusgate migrate --to NAME`: the schema taken up or down to NAME with the migrations'
 * `up` and `down`. Refused for a name this build does not know, and for a database that holds
 * migrations this build does not know (only the release that wrote them knows their way back).
 */
export async function migrateToNamed(db: Db, name: string): Promise<string[]> {
  if (!(name in MIGRATIONS)) {
    throw new MigrationRefused(
      `no migration named ${name} in this build (known: ${knownMigrations().join(', ')})`,
    )
  }
  const { unknown } = await migrationState(db)
  if (unknown.length > 0) {
    throw new MigrationRefused(
      `the database holds migrations this build does not know (${unknown.join(', ')}): ` +
        `run migrate --to with the release that applied them`,
    )
  }
  return migrateTo(db, name)
}

/** A move of the schema refused before anything ran; its message is for the operator. */
export class MigrationRefused extends Error {}

/** Which migrations the database holds that this build does not know, and which it lacks. */
export async function migrationState(db: Db): Promise<{ unknown: string[]; pending: string[] }> {
  const applied = await appliedMigrations(db)
  return {
    unknown: [...applied].filter((name) => !(name in MIGRATIONS)).sort(),
    pending: knownMigrations().filter((name) => !applied.has(name)),
  }
}

/** One move of the migrator, tried again while it meets other clients' DDL; the migrations it ran. */
async function move(
  db: Db,
  step: (migrator: Migrator) => Promise<MigrationResultSet>,
): Promise<string[]> {
  const migrator = migratorFor(db)
  for (let attempt = 1; ; attempt += 1) {
    const { error, results } = await step(migrator)
    if (error === undefined) {
      return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName)
    }
    if (attempt < MIGRATION_ATTEMPTS && results === undefined && metOthersDdl(error, db.schema)) {
      // Apart, at random: DDL that comes in a burst is let to pass.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 50 * attempt))
      continue
    }
    throw error instanceof Error ? error : new Error('migration failed', { cause: error })
  }
}

/**
 * Before it runs a migration (its result set is not yet begun), Kysely's migrator looks for its
 * tables among every schema, table and column of the database, naming each one back to PostgreSQL
 * (`has_schema_privilege`, `pg_get_serial_sequence`). What another client drops or alters
 * meanwhile fails that look, though ours is there: "schema … does not exist" (invalid_schema_name),
 * "relation "…"."…" does not exist" (undefined_table), or "column "…" of relation "…" does not
 * exist" (undefined_column, naming no schema). Looked again, the catalog agrees with itself. A
 * schema named as missing that is ours is not another client's: that fails at once
 * (docs/deployment.md, "PostgreSQL settings").
 */
function metOthersDdl(error: unknown, ours: string | null): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown }
  if (typeof message !== 'string') return false
  if (code === '42703') return /^column "[^"]+" of relation "[^"]+" does not exist$/.test(message)
  const named =
    code === '3F000'
      ? /^schema "([^"]+)" does not exist$/.exec(message)?.[1]
      : code === '42P01'
        ? /^relation "([^".]+)\.[^"]+" does not exist$/.exec(message)?.[1]
        : undefined
  return named !== undefined && named !== ours
}

/**
 * The migrations this build knows that the database has not applied (empty: schema is current).
 * One read of the migration table: readiness probes ask every few seconds, and the migrator's own
 * listing introspects every table of the schema first.
 */
export async function pendingMigrations(db: Db): Promise<string[]> {
  const applied = await appliedMigrations(db)
  return knownMigrations().filter((name) => !applied.has(name))
}

/** The names in the migration table, known to this build or not. */
async function appliedMigrations(db: Db): Promise<Set<string>> {
  const table =
    db.schema === null ? DEFAULT_MIGRATION_TABLE : `${db.schema}.${DEFAULT_MIGRATION_TABLE}`
  try {
    const { rows } = await sql<{ name: string }>`SELECT name FROM ${sql.table(table)}`.execute(
      db.kysely,
    )
    return new Set(rows.map((row) => row.name))
  } catch (error) {
    if (!isMissingTable(error)) throw error
    // No migration table yet: nothing is applied.
    return new Set()
  }
}

/** PostgreSQL's undefined_table, SQLite's "no such table". */
function isMissingTable(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown }
  return code === '42P01' || (typeof message === 'string' && message.startsWith('no such table'))
}
