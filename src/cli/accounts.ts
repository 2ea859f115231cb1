import { EXIT, NotFoundError, type Command } from './command.js'
import { cliOrigin, withServices } from './maintenance.js'

function unknownUser(openId: string): NotFoundError {
  return new NotFoundError(`no user with openId ${JSON.stringify(openId)}`)
}

function iso(date: Date | null): string | null {
  return date === null ? null : date.toISOString()
}

const show: Command = {
  name: 'users show',
  summary: 'what campusgate holds about a user (no secrets, no hashes)',
  usage:
    '  campusgate users show <openId> [--json]\n  campusgate users show --open-id <openId> [--json]',
  options: { json: { type: 'boolean' } },
  optionHelp: { json: 'one JSON object instead of lines' },
  takesOpenId: true,
  async run({ config, values, io }) {
    const openId = values.openId as string
    return withServices(config, io, async ({ accounts }) => {
      const user = await accounts.overview(openId)
      if (user === null) throw unknownUser(openId)
      const view = {
        id: user.id,
        openId: user.openId,
        unionId: user.unionId,
        // Every way a messenger platform knows the person (docs/identities.md); never a key.
        identities: user.identities.map((identity) => ({
          platform: identity.platform,
          appId: identity.appId,
          openId: identity.openId,
          unionId: identity.unionId,
          createdAt: new Date(identity.createdAt).toISOString(),
        })),
        createdAt: iso(user.createdAt),
        updatedAt: iso(user.updatedAt),
        // The tier GET /session answers now: the one rule (sessions/tier.ts), lapse included.
        tier: user.tier,
        universityLinkedAt: iso(user.universityLinkedAt),
        sessions: user.sessions.map((session) => ({
          id: session.id,
          device: session.device,
          createdAt: iso(session.createdAt),
          lastUsedAt: iso(session.lastUsedAt),
          expiresAt: iso(session.expiresAt),
        })),
        mails: user.mails,
      }
      if (values.json === true) {
        io.out(`${JSON.stringify(view, null, 2)}\n`)
        return EXIT.ok
      }
      const rows: [string, string][] = [
        ['user', view.id],
        ['openId', view.openId],
        ['unionId', view.unionId ?? '-'],
        ...view.identities.map((identity): [string, string] => [
          'identity',
          `${identity.platform} ${identity.appId ?? '(app not recorded)'} ${identity.openId}` +
            (identity.unionId === null ? '' : ` unionid ${identity.unionId}`),
        ]),
        ['created', view.createdAt ?? '-'],
        ['updated', view.updatedAt ?? '-'],
        ['tier', view.tier ?? 'none (no live session)'],
        [
          'university',
          view.universityLinkedAt === null ? 'not linked' : `linked ${view.universityLinkedAt}`,
        ],
        [
          'sessions',
          view.sessions.length === 0
            ? 'none'
            : `${view.sessions.length} live (campusgate sessions list ${view.openId})`,
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
  summary: 'erase a user exactly as DELETE /user does (sessions, codes, attempts, mails, the user)',
  usage: '  campusgate users erase <openId>\n  campusgate users erase --open-id <openId>',
  options: {},
  takesOpenId: true,
  async run({ config, values, io }) {
    const openId = values.openId as string
    return withServices(config, io, async ({ accounts }) => {
      if (!(await accounts.erase({ openId, origin: cliOrigin() }))) throw unknownUser(openId)
      io.out(`erased ${openId}\n`)
      return EXIT.ok
    })
  },
}

const exportData: Command = {
  name: 'users export',
  summary:
    'everything campusgate holds about a user, as JSON (an access request; no secret, no mail body)',
  usage: '  campusgate users export <openId>\n  campusgate users export --open-id <openId>',
  options: {},
  takesOpenId: true,
  async run({ config, values, io }) {
    const openId = values.openId as string
    return withServices(config, io, async ({ access }) => {
      const document = await access.export({ openId }, cliOrigin())
      if (document === null) throw unknownUser(openId)
      io.out(`${JSON.stringify(document, null, 2)}\n`)
      return EXIT.ok
    })
  },
}

export const accountCommands: readonly Command[] = [show, erase, exportData]
