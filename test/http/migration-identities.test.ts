import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sql, type Kysely } from 'kysely'
import { createDb, type Db } from '../../src/db/database.js'
import { migrateTo, migrateToLatest } from '../../src/db/migrate.js'
import type { Database } from '../../src/db/schema.js'
import { generateSecret, hashSecret } from '../../src/lib/secrets.js'
import { freshDatabase } from '../helpers/database.js'
import { call, startService } from '../helpers/service.js'

/**
 * Issue 60: migration 0015 moves every user's openId, session key and university link into
 * identities, and its way back puts them on users again (docs/identities.md, "Moving to
 * identities"). Run on a populated database, on SQLite and on PostgreSQL.
 */

const BEFORE = '0014_console_roles'
const DAY = 86_400_000
const now = Date.now()

/** The rows as the schema before identities holds them, in a stable order. */
async function legacyRows(db: Kysely<Database>) {
  const users = await sql<Record<string, unknown>>`SELECT * FROM users ORDER BY id`.execute(db)
  const sessions = await sql<Record<string, unknown>>`
    SELECT id, user_id, key_hash, created_at, expires_at, touched_at, expiry_floor, device
    FROM sessions ORDER BY id`.execute(db)
  const codes = await sql<
    Record<string, unknown>
  >`SELECT * FROM registration_codes ORDER BY id`.execute(db)
  // Numbers come back as strings from some drivers' bigints: compare their text.
  const plain = (rows: Record<string, unknown>[]) =>
    rows.map((row) =>
      Object.fromEntries(
        Object.entries(row).map(([key, value]) => [
          key,
          value === null ? null : String(value as string | number),
        ]),
      ),
    )
  return { users: plain(users.rows), sessions: plain(sessions.rows), codes: plain(codes.rows) }
}

/** Three users as the release before identities kept them, with the keys of their sessions. */
async function populate(db: Db): Promise<Record<string, string>> {
  const keys: Record<string, string> = {}
  const user = (id: string, fields: Record<string, unknown>) => ({
    id,
    union_id: null,
    messenger_session_key: null,
    university_token: null,
    university_linked_at: null,
    university_issuer: null,
    university_subject: null,
    university_email: null,
    university_name: null,
    university_is_student: null,
    university_binding: null,
    created_at: now - 10 * DAY,
    updated_at: now - DAY,
    ...fields,
  })
  const rows = [
    // Linked (tier 2), with a unionid and two devices.
    user('u-linked', {
      open_id: 'open-linked',
      union_id: 'union-linked',
      messenger_session_key: 'sealed-messenger-linked',
      university_token: 'sealed-token-linked',
      university_linked_at: now - 2 * DAY,
      university_issuer: 'https://idp.example.edu',
      university_subject: 'subject-linked',
      university_email: 'linked@example.edu',
      university_name: 'Linked Member',
      university_is_student: 1,
      university_binding: hashSecret('https://idp.example.edu\nsubject-linked'),
    }),
    // Tier 1; its link lapsed long ago, the identity it proved kept.
    user('u-lapsed', {
      open_id: 'open-lapsed',
      messenger_session_key: 'sealed-messenger-lapsed',
      university_issuer: 'https://idp.example.edu',
      university_subject: 'subject-lapsed',
      university_email: 'lapsed@example.edu',
    }),
    // Logged out everywhere: nothing held, a pending confirmation code.
    user('u-idle', { open_id: 'open-idle' }),
  ]
  for (const row of rows) {
    const columns = Object.keys(row)
    await sql`INSERT INTO users (${sql.join(columns.map((column) => sql.ref(column)))})
      VALUES (${sql.join(columns.map((column) => row[column as keyof typeof row]))})`.execute(
      db.kysely,
    )
  }
  const session = async (id: string, userId: string, device: string | null) => {
    keys[id] = generateSecret()
    await db.kysely
      .insertInto('sessions')
      .values({
        id,
        user_id: userId,
        key_hash: hashSecret(keys[id]),
        created_at: now - 3 * DAY,
        expires_at: now + 20 * DAY,
        touched_at: now - DAY,
        expiry_floor: now + 20 * DAY,
        device,
      })
      .execute()
  }
  await session('s-linked-phone', 'u-linked', 'Phone/1.0')
  await session('s-linked-desktop', 'u-linked', 'Desktop/2.0')
  await session('s-lapsed', 'u-lapsed', null)
  await db.kysely
    .insertInto('registration_codes')
    .values({
      id: 'code-idle',
      user_id: 'u-idle',
      code_hash: hashSecret('a code'),
      created_at: now,
      expires_at: now + 30 * 60_000,
    })
    .execute()
  return keys
}

describe('migration 0015 (identities)', () => {
  it('moves users into identities without a key, tier or openId changing meaning, and back', async () => {
    const database = await freshDatabase()
    const db = createDb(database.url, { poolSize: 2 })
    let keys: Record<string, string>
    let before: Awaited<ReturnType<typeof legacyRows>>
    try {
      await migrateTo(db, BEFORE)
      keys = await populate(db)
      before = await legacyRows(db.kysely)
      await migrateToLatest(db)

      const identities = await db.kysely
        .selectFrom('identities')
        .select(['user_id', 'kind', 'provider', 'realm', 'subject', 'union_id', 'secret'])
        .select(['email', 'linked_at', 'binding'])
        .orderBy('user_id')
        .orderBy('kind')
        .execute()
      assert.deepEqual(
        identities.map((row) => [row.user_id, row.kind, row.provider, row.realm, row.subject]),
        [
          ['u-idle', 'messenger', 'wechat', '', 'open-idle'],
          ['u-lapsed', 'messenger', 'wechat', '', 'open-lapsed'],
          ['u-lapsed', 'university', '', 'https://idp.example.edu', 'subject-lapsed'],
          ['u-linked', 'messenger', 'wechat', '', 'open-linked'],
          ['u-linked', 'university', '', 'https://idp.example.edu', 'subject-linked'],
        ],
      )
      const linked = identities.filter((row) => row.user_id === 'u-linked')
      assert.equal(linked[0]?.union_id, 'union-linked')
      assert.equal(linked[0]?.secret, 'sealed-messenger-linked')
      assert.equal(linked[1]?.secret, 'sealed-token-linked')
      assert.equal(Number(linked[1]?.linked_at), now - 2 * DAY)
      assert.equal(identities[2]?.linked_at, null)
      const users = await sql<Record<string, unknown>>`SELECT * FROM users ORDER BY id`.execute(
        db.kysely,
      )
      // The person only: no openId, key or link (a suspension, 0019, is the person's own).
      assert.deepEqual(Object.keys(users.rows[0]).sort(), [
        'created_at',
        'id',
        'suspended_at',
        'suspension_reason',
        'updated_at',
      ])
    } finally {
      await db.kysely.destroy()
    }

    // Every key answers as before: the same openId, the same tier, the same university account.
    const service = await startService({ DATABASE_URL: database.url })
    try {
      const asked = async (session: string) =>
        call(`${service.url}/session`, { headers: { authorization: keys[session] } })
      const phone = await asked('s-linked-phone')
      assert.equal(phone.status, 200, phone.text)
      assert.equal(phone.body.openId, 'open-linked')
      assert.equal(phone.body.sessionId, 's-linked-phone')
      assert.equal(phone.body.tier, 'university-registered')
      assert.equal(phone.body.platform, 'wechat')
      assert.equal(phone.body.appId, undefined, 'the app was never recorded')
      assert.deepEqual(phone.body.university, {
        subject: 'subject-linked',
        email: 'linked@example.edu',
        name: 'Linked Member',
        isStudent: true,
        linkedAt: new Date(now - 2 * DAY).toISOString(),
      })
      const lapsed = await asked('s-lapsed')
      assert.equal(lapsed.body.openId, 'open-lapsed')
      assert.equal(lapsed.body.tier, 'messenger-registered')
      const sessions = await call(`${service.url}/sessions`, {
        headers: { authorization: keys['s-linked-desktop'] },
      })
      assert.equal((sessions.body.sessions as unknown[]).length, 2)
    } finally {
      await service.close()
    }

    // The first login from an app claims the openId's identity: the same person, one more device.
    const claimed = await startService({ DATABASE_URL: database.url })
    try {
      const minted = await call(`${claimed.url}/_sandbox/messenger/login-codes`, {
        method: 'POST',
        json: { openId: 'open-linked', unionId: 'union-linked' },
      })
      const registered = await call(`${claimed.url}/register/messenger`, {
        method: 'POST',
        json: { appId: 'wx-sandbox-app', appSecret: 'server-held', code: minted.body.code },
      })
      assert.equal(registered.status, 200, registered.text)
      const key = String(registered.body.sessionKey)
      const session = await call(`${claimed.url}/session`, { headers: { authorization: key } })
      assert.equal(session.body.tier, 'university-registered')
      assert.equal(session.body.appId, 'wx-sandbox-app')
      const devices = await call(`${claimed.url}/sessions`, { headers: { authorization: key } })
      assert.equal((devices.body.sessions as unknown[]).length, 3)
      const old = await call(`${claimed.url}/session`, {
        headers: { authorization: keys['s-linked-phone'] },
      })
      assert.equal(old.body.appId, 'wx-sandbox-app', 'its identity now names the app')
      const logoutAll = await call(`${claimed.url}/logout?scope=all`, {
        method: 'POST',
        headers: { authorization: key },
      })
      assert.equal(logoutAll.status, 200)
    } finally {
      await claimed.close()
    }

    // Back: the rows the service did not change are exactly as they were.
    const again = createDb(database.url, { poolSize: 2 })
    try {
      await migrateTo(again, BEFORE)
      const back = await legacyRows(again.kysely)
      const untouched = (rows: Record<string, unknown>[]) =>
        rows.filter((row) => row.id !== 'u-linked' && row.user_id !== 'u-linked')
      assert.deepEqual(untouched(back.users), untouched(before.users))
      assert.deepEqual(untouched(back.sessions), untouched(before.sessions))
      assert.deepEqual(back.codes, before.codes)
      // The person who logged out everywhere since: the openId kept, the credentials nullified.
      const linked = back.users.find((row) => row.id === 'u-linked')
      assert.equal(linked?.open_id, 'open-linked')
      assert.equal(linked?.union_id, 'union-linked')
      assert.equal(linked?.messenger_session_key, null)
      assert.equal(linked?.university_token, null)
      assert.equal(linked?.university_subject, 'subject-linked')
    } finally {
      await again.kysely.destroy()
      await database.drop()
    }
  })

  it('back to one openId per user: a person of two apps becomes two users, each with its own sessions', async () => {
    const database = await freshDatabase()
    const db = createDb(database.url, { poolSize: 2 })
    try {
      await migrateToLatest(db)
      const identity = (id: string, userId: string, realm: string, openId: string, at: number) =>
        db.kysely
          .insertInto('identities')
          .values({
            id,
            user_id: userId,
            kind: 'messenger',
            provider: 'wechat',
            realm,
            subject: openId,
            union_id: 'union-both',
            secret: `sealed-${openId}`,
            email: null,
            name: null,
            is_student: null,
            linked_at: null,
            binding: null,
            created_at: at,
            updated_at: at,
          })
          .execute()
      await db.kysely
        .insertInto('users')
        .values({ id: 'person', created_at: 1, updated_at: 2 })
        .execute()
      await identity('i-main', 'person', 'wx-main', 'open-main', 1)
      await identity('i-market', 'person', 'wx-market', 'open-market', 5)
      for (const [id, identityId] of [
        ['s-main', 'i-main'],
        ['s-market', 'i-market'],
      ] as const) {
        await db.kysely
          .insertInto('sessions')
          .values({
            id,
            user_id: 'person',
            identity_id: identityId,
            key_hash: hashSecret(id),
            created_at: now,
            expires_at: now + DAY,
            touched_at: now,
            expiry_floor: now + DAY,
            device: null,
          })
          .execute()
      }
      await migrateTo(db, BEFORE)
      const { users, sessions } = await legacyRows(db.kysely)
      assert.deepEqual(
        users.map((row) => [row.id, row.open_id, row.union_id, row.messenger_session_key]),
        [
          ['i-market', 'open-market', 'union-both', 'sealed-open-market'],
          ['person', 'open-main', 'union-both', 'sealed-open-main'],
        ],
      )
      assert.deepEqual(
        sessions.map((row) => [row.id, row.user_id]),
        [
          ['s-main', 'person'],
          ['s-market', 'i-market'],
        ],
      )
      // And forward again.
      await migrateToLatest(db)
      const people = await db.kysely.selectFrom('identities').select('user_id').execute()
      assert.equal(people.length, 2)
    } finally {
      await db.kysely.destroy()
      await database.drop()
    }
  })
})
