import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { SqliteDb } from '../../src/db/database.js'
import { inTransaction } from '../../src/db/transaction.js'
import { sqliteFile, type SqliteFile } from '../helpers/database.js'

// Db.writer: short writes run synchronously on SQLite's writing connection, outside Kysely.

describe('the SQLite writer (Db.writer)', () => {
  let file: SqliteFile
  let db: SqliteDb
  const committed = (): string[] => file.committedUsers()
  const insertUser = 'insert into users (id, created_at, updated_at) values (?, 1, 1)'

  before(async () => {
    file = await sqliteFile()
    db = file.db
  })
  after(() => file.close())

  it('runs the statements as one transaction and commits it before returning', () => {
    const changes: number[] = []
    const ran = db.writer.transaction((run) => {
      changes.push(run(insertUser, ['a1']))
      changes.push(run(insertUser, ['a2']))
      changes.push(run("update users set updated_at = 2 where id = 'nobody'", []))
    })
    assert.equal(ran, true)
    assert.deepEqual(changes, [1, 1, 0])
    assert.deepEqual(committed(), ['a1', 'a2'])
  })

  it('rolls everything back and throws when a statement fails; the next transaction runs', () => {
    assert.throws(
      () =>
        db.writer.transaction((run) => {
          run(insertUser, ['b1'])
          run(insertUser, ['a1'])
        }),
      /UNIQUE/,
    )
    assert.deepEqual(committed(), ['a1', 'a2'])
    assert.equal(
      db.writer.transaction((run) => void run(insertUser, ['b2'])),
      true,
    )
    assert.deepEqual(committed(), ['a1', 'a2', 'b2'])
  })

  it('runs nothing while a Kysely transaction is open, and leaves that transaction alone', async () => {
    let during: boolean | undefined
    await inTransaction(db.kysely, async (trx) => {
      await trx.insertInto('users').values({ id: 'c1', created_at: 1, updated_at: 1 }).execute()
      during = db.writer.transaction((run) => void run(insertUser, ['c2']))
      await trx.insertInto('users').values({ id: 'c3', created_at: 1, updated_at: 1 }).execute()
    })
    assert.equal(during, false)
    assert.deepEqual(committed(), ['a1', 'a2', 'b2', 'c1', 'c3'])
  })
})
