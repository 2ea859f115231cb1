import type { Kysely } from 'kysely'

/**
 * The university identity a round trip proved, on the user: who vouches (issuer), the stable
 * subject, email, name, student status. `university_binding` is set only under
 * UNIVERSITY_IDENTITY_BINDING=exclusive, while the link holds: its unique index lets one identity
 * give tier 2 to one messenger user at a time, whatever the race.
 */
export async function up(db: Kysely<any>): Promise<void> {
  for (const column of [
    'university_issuer',
    'university_subject',
    'university_email',
    'university_name',
    'university_binding',
  ]) {
    await db.schema.alterTable('users').addColumn(column, 'text').execute()
  }
  await db.schema.alterTable('users').addColumn('university_is_student', 'integer').execute()
  await db.schema
    .createIndex('users_university_binding')
    .on('users')
    .column('university_binding')
    .unique()
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('users_university_binding').execute()
  for (const column of [
    'university_is_student',
    'university_binding',
    'university_name',
    'university_email',
    'university_subject',
    'university_issuer',
  ]) {
    await db.schema.alterTable('users').dropColumn(column).execute()
  }
}
