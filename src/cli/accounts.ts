import { findSessionOfUser } from '../sessions/store.js'
import { listMail } from '../mail/outbox.js'
import { findUserByOpenId } from '../users/store.js'
import type { UserRow } from '../db/schema.js'
import type { Db } from '../db/database.js'
import { EXIT, NotFoundError, type Command } from './command.js'
import { cliOrigin, cliSessions, withDb } from './maintenance.js'

const OPEN_ID = { 'open-id': { type: 'string' } } as const
const OPEN_ID_HELP = { 'open-id': "the user's messenger openId" }

async function userOrNotFound(db: Db, openId: string): Promise<UserRow> {
  const user = await findUserByOpenId(db.kysely, openId)
  if (user === null) throw new NotFoundError(`no user with openId ${JSON.stringify(openId)}`)
  return user
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString()
}

const revoke: Command = {
  name: 'sessions revoke',
  summary: "end a user's session exactly as POST /logout does",
  usage: '  campusgate sessions revoke --open-id <openId>',
  options: OPEN_ID,
  optionHelp: OPEN_ID_HELP,
  required: ['open-id'],
  async run({ config, values, io }) {
    const openId = values['open-id'] as string
    return withDb(config, async (db) => {
      const user = await userOrNotFound(db, openId)
      const session = await findSessionOfUser(db.kysely, user.id)
      const ended =
        session !== null && (await cliSessions(config, db).revoke(session.id, cliOrigin()))
      if (!ended) throw new NotFoundError(`${openId} has no live session; nothing changed`)
      io.out(`revoked the session of ${openId}; its key, token and pending links are void\n`)
      return EXIT.ok
    })
  },
}

const show: Command = {
  name: 'users show',
  summary: 'what campusgate holds about a user (no secrets, no hashes)',
  usage: '  campusgate users show --open-id <openId> [--json]',
  options: { ...OPEN_ID, json: { type: 'boolean' } },
  optionHelp: { ...OPEN_ID_HELP, json: 'one JSON object instead of lines' },
  required: ['open-id'],
  async run({ config, values, io }) {
    const openId = values['open-id'] as string
    return withDb(config, async (db) => {
      const user = await userOrNotFound(db, openId)
      const session = await findSessionOfUser(db.kysely, user.id)
      const mails = await listMail(db.kysely, {
        includeFinished: true,
        limit: 1000,
        userId: user.id,
      })
      const linked = user.university_linked_at !== null
      const view = {
        id: user.id,
        openId: user.open_id,
        unionId: user.union_id,
        createdAt: iso(user.created_at),
        updatedAt: iso(user.updated_at),
        tier: session === null ? null : linked ? 'university-registered' : 'messenger-registered',
        universityLinkedAt: linked ? iso(user.university_linked_at) : null,
        session:
          session === null
            ? null
            : { createdAt: iso(session.created_at), expiresAt: iso(session.expires_at) },
        mails: {
          queued: mails.filter((m) => m.state === 'queued').length,
          sent: mails.filter((m) => m.state === 'sent').length,
          abandoned: mails.filter((m) => m.state === 'abandoned').length,
        },
      }
      if (values.json === true) {
        io.out(`${JSON.stringify(view, null, 2)}\n`)
        return EXIT.ok
      }
      const rows: [string, string][] = [
        ['user', view.id],
        ['openId', view.openId],
        ['unionId', view.unionId ?? '-'],
        ['created', view.createdAt ?? '-'],
        ['updated', view.updatedAt ?? '-'],
        ['tier', view.tier ?? 'none (no live session)'],
        [
          'university',
          view.universityLinkedAt === null ? 'not linked' : `linked ${view.universityLinkedAt}`,
        ],
        [
          'session',
          view.session === null
            ? 'none'
            : `since ${view.session.createdAt}, expires ${view.session.expiresAt}`,
        ],
        [
          'mail',
          `${view.mails.queued} queued, ${view.mails.sent} sent, ${view.mails.abandoned} abandoned`,
        ],
      ]
      io.out(rows.map(([label, value]) => `${label.padEnd(10)}  ${value}\n`).join(''))
      return EXIT.ok
    })
  },
}

const erase: Command = {
  name: 'users erase',
  summary: 'erase a user exactly as DELETE /user does (session, codes, attempts, mails, the user)',
  usage: '  campusgate users erase --open-id <openId>',
  options: OPEN_ID,
  optionHelp: OPEN_ID_HELP,
  required: ['open-id'],
  async run({ config, values, io }) {
    const openId = values['open-id'] as string
    return withDb(config, async (db) => {
      const user = await userOrNotFound(db, openId)
      await cliSessions(config, db).eraseUser({ userId: user.id, openId }, cliOrigin())
      io.out(`erased ${openId}\n`)
      return EXIT.ok
    })
  },
}

export const accountCommands: readonly Command[] = [revoke, show, erase]
