import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import SQLite from 'better-sqlite3'
import type { Db } from '../../src/db/database.js'
import {
  findLoginCandidates,
  findLoginCandidatesStatement,
  insertMessengerIdentity,
} from '../../src/identities/store.js'
import { insertUser } from '../../src/users/store.js'
import { migratedDatabase, TEST_DIALECT, type MigratedDatabase } from '../helpers/database.js'

// Registration's one read (docs/identities.md, "Registration's one read"): what it finds, in
// which order, when it knows it saw every holder of a unionid, and that SQLite runs it as planned
// once (runs on SQLite and, with DATABASE_URL, on PostgreSQL).

describe("registration's one read", () => {
  let database: MigratedDatabase
  let db: Db

  /** A person `userId` with a WeChat identity `openId` in `appId`, made at `at`. */
  async function identity(
    userId: string,
    openId: string,
    { appId = 'wx-main', unionId = null as string | null, at = 1_000, newPerson = true } = {},
  ): Promise<void> {
    if (newPerson) await insertUser(db.kysely, userId, at)
    const added = await insertMessengerIdentity(
      db.kysely,
      {
        id: `i-${openId}-${appId}`,
        userId,
        platform: 'wechat',
        appId,
        openId,
        unionId,
        encryptedSessionKey: 'sealed',
      },
      at,
    )
    assert.ok(added)
  }

  const login = (openId: string, unionId: string | null, appId = 'wx-main') => ({
    platform: 'wechat',
    appId,
    openId,
    unionId,
  })

  before(async () => {
    database = await migratedDatabase()
    db = database.db
  })
  after(() => database.drop())

  it('finds the identity, the one from before apps were recorded, and the holders oldest first', async () => {
    await identity('u-late', 'o-late', { unionId: 'union-a', at: 3_000 })
    await identity('u-early', 'o-early', { appId: 'wx-market', unionId: 'union-a', at: 2_000 })
    await identity('u-self', 'o-self', { unionId: 'union-a', at: 4_000 })
    await identity('u-old', 'o-self', { appId: '', at: 1_000 })
    await identity('u-other', 'o-other', { unionId: 'union-a', at: 1_500 })
    await identity('u-other', 'o-other-qq', {
      unionId: 'union-a',
      at: 1_600,
      newPerson: false,
    })

    const found = await findLoginCandidates(db.kysely, login('o-self', 'union-a'))
    assert.equal(found.known?.userId, 'u-self')
    assert.equal(found.unknownApp?.userId, 'u-old')
    // The login's own identity holds the unionid too; each person once, by their oldest identity.
    assert.deepEqual(found.holders, ['u-other', 'u-early', 'u-late', 'u-self'])
    assert.equal(found.complete, true)

    const stranger = await findLoginCandidates(db.kysely, login('o-new', null))
    assert.deepEqual(stranger, { known: null, unknownApp: null, holders: [], complete: true })
    const otherApp = await findLoginCandidates(db.kysely, login('o-late', null, 'wx-market'))
    assert.equal(otherApp.known, null)
  })

  it('says it is incomplete once sixteen identities hold the unionid, and still finds the login', async () => {
    for (let i = 0; i < 15; i += 1) {
      await identity(`u-many-${i}`, `o-many-${i}`, { unionId: 'union-many', at: 10_000 + i })
    }
    const fifteen = await findLoginCandidates(db.kysely, login('o-many-0', 'union-many'))
    assert.equal(fifteen.complete, true)
    assert.equal(fifteen.holders.length, 15)
    assert.equal(fifteen.holders[0], 'u-many-0')
    assert.equal(fifteen.known?.userId, 'u-many-0')

    await identity('u-many-15', 'o-many-15', { unionId: 'union-many', at: 10_015 })
    const sixteen = await findLoginCandidates(db.kysely, login('o-many-15', 'union-many'))
    assert.equal(sixteen.complete, false)
    assert.equal(sixteen.known?.userId, 'u-many-15')

    // The newest of seventeen: its own identity is found by its openId, whatever the unionid's
    // branch returned (a LIMIT over all of them once left it out, and registration then tried to
    // insert it again, again and again).
    await identity('u-many-16', 'o-many-16', { unionId: 'union-many', at: 10_016 })
    const seventeen = await findLoginCandidates(db.kysely, login('o-many-16', 'union-many'))
    assert.equal(seventeen.complete, false)
    assert.equal(seventeen.known?.userId, 'u-many-16')
  })

  it('a second insert of the same identity adds nothing and says so', async () => {
    await identity('u-twice', 'o-twice')
    const again = await insertMessengerIdentity(
      db.kysely,
      {
        id: 'i-other',
        userId: 'u-twice',
        platform: 'wechat',
        appId: 'wx-main',
        openId: 'o-twice',
        unionId: null,
        encryptedSessionKey: 'sealed',
      },
      2_000,
    )
    assert.equal(again, null)
    const found = await findLoginCandidates(db.kysely, login('o-twice', null))
    assert.equal(found.known?.id, 'i-o-twice-wx-main')
  })

  it('SQLite runs it from the statement it prepared, with no temporary B-tree', async (t) => {
    if (TEST_DIALECT !== 'sqlite') return t.skip('SQLite only')
    const query = findLoginCandidatesStatement.bind(db.kysely, 'wechat', 'wx-main', 'o', 'u')
    const sqlite = new SQLite(database.url.replace(/^sqlite:/, ''), { readonly: true })
    try {
      const plan = sqlite.prepare(`EXPLAIN QUERY PLAN ${query.sql}`).all(...query.parameters) as {
        detail: string
      }[]
      const details = plan.map((step) => step.detail)
      assert.ok(
        !details.some((detail) => /TEMP B-TREE|LIST SUBQUERY/.test(detail)),
        String(details),
      )
      assert.equal(
        details.filter((detail) => /^SEARCH identities USING INDEX/.test(detail)).length,
        3,
      )
      // A LIMIT bound as a parameter would make SQLite plan the statement again on every run.
      assert.doesNotMatch(query.sql, /limit \?/i)
    } finally {
      sqlite.close()
    }
  })
})
