import type { Kysely } from 'kysely'

/**
 * The operator console's roles (docs/console.md, "Roles"): `admin` acts, `viewer` only reads. A
 * link carries the role it was made for (`campusgate console link --role`), and the session it
 * opens keeps it. Links and sessions made before roles were admins', and stay so.
 */
export async function up(db: Kysely<any>): Promise<void> {
  for (const table of ['console_sign_in_tokens', 'console_sessions']) {
    await db.schema
      .alterTable(table)
      .addColumn('role', 'text', (col) => col.notNull().defaultTo('admin'))
      .execute()
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['console_sign_in_tokens', 'console_sessions']) {
    await db.schema.alterTable(table).dropColumn('role').execute()
  }
}
