import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type SQLite from 'better-sqlite3'
import { sql, type Transaction } from 'kysely'
import type { SqliteDb } from '../../src/db/database.js'
import { GROUP_MAX, groupedCommits } from '../../src/db/grouped-commits.js'
import type { Database } from '../../src/db/schema.js'
import { sqliteFile, type SqliteFile } from '../helpers/database.js'

// Transactions of one event-loop turn share one SQLite commit, each in its own savepoint.

describe('grouped commits', () => {
  let file: SqliteFile
  let db: SqliteDb
  /** A second connection: sees only what was committed. */
  let outside: SQLite.Database
  const committedUsers = (): string[] => file.committedUsers()
  const addUser = (id: string) => async (trx: Transaction<Database>) => {
    await trx.insertInto('users').values({ id, created_at: 1, updated_at: 1 }).execute()
    return id
  }

  before(async () => {
    file = await sqliteFile()
    db = file.db
    outside = file.outside
  })
  after(() => file.close())

  it('commits the transactions of one turn together, and settles each only once committed', async () => {
    const run = groupedCommits(db.kysely)
    const commits: number[] = []
    const dataVersion = (): number => outside.pragma('data_version', { simple: true }) as number
    const before = dataVersion()
    const settled = await Promise.all(
      ['a1', 'a2', 'a3'].map((id) =>
        run(addUser(id)).then((value) => {
          // Settled: already visible to another connection, so committed.
          commits.push(committedUsers().length)
          return value
        }),
      ),
    )
    assert.deepEqual(settled, ['a1', 'a2', 'a3'])
    assert.deepEqual(commits, [3, 3, 3])
    // One commit for the three: the file changed once as another connection sees it.
    assert.equal(dataVersion() - before, 1)
  })

  it('rolls a failed transaction back alone; the others of its group commit', async () => {
    const run = groupedCommits(db.kysely)
    const results = await Promise.allSettled([
      run(addUser('b1')),
      run(async (trx) => {
        await addUser('b2')(trx)
        throw new Error('changed its mind')
      }),
      run(addUser('a1')), // already there: the primary key refuses it
      run(addUser('b3')),
    ])
    assert.deepEqual(
      results.map((result) => result.status),
      ['fulfilled', 'rejected', 'rejected', 'fulfilled'],
    )
    assert.match(String((results[1] as PromiseRejectedResult).reason), /changed its mind/)
    assert.deepEqual(committedUsers(), ['a1', 'a2', 'a3', 'b1', 'b3'])
  })

  it('commits a transaction alone in its turn, or rolls all of it back', async () => {
    const run = groupedCommits(db.kysely)
    assert.equal(await run(addUser('e1')), 'e1')
    await assert.rejects(
      run(async (trx) => {
        await addUser('e2')(trx)
        await addUser('e3')(trx)
        throw new Error('changed its mind')
      }),
      /changed its mind/,
    )
    await assert.rejects(run(addUser('e1')), /UNIQUE/)
    assert.deepEqual(
      committedUsers().filter((id) => id.startsWith('e')),
      ['e1'],
    )
  })

  it('splits a turn with more than a group holds, and every transaction commits', async () => {
    const run = groupedCommits(db.kysely)
    const ids = Array.from({ length: GROUP_MAX + 3 }, (_, i) => `c${String(i).padStart(3, '0')}`)
    assert.deepEqual(await Promise.all(ids.map((id) => run(addUser(id)))), ids)
    assert.equal(committedUsers().filter((id) => id.startsWith('c')).length, ids.length)
  })

  it('fails every transaction of the group when the commit itself fails', async () => {
    const run = groupedCommits(db.kysely)
    // A deferred foreign key fails at COMMIT, after every savepoint was released.
    const results = await Promise.allSettled([
      run(addUser('d1')),
      run(async (trx) => {
        await sql`PRAGMA defer_foreign_keys = ON`.execute(trx)
        await trx
          .insertInto('sessions')
          .values({
            id: 'orphan',
            user_id: 'no-such-user',
            key_hash: 'k',
            created_at: 1,
            expires_at: 2,
            touched_at: 1,
          })
          .execute()
      }),
    ])
    assert.deepEqual(
      results.map((result) => result.status),
      ['rejected', 'rejected'],
    )
    assert.ok(!committedUsers().includes('d1'))
  })
})
