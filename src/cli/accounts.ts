import { SUSPENSION_REASON_MAX } from '../accounts/users.js'
import { EXIT, NotFoundError, UsageError, type Command } from './command.js'
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
        suspended:
          user.suspension === null
            ? null
            : { since: new Date(user.suspension.at).toISOString(), reason: user.suspension.reason },
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
        [
          'suspended',
          view.suspended === null
            ? 'no'
            : `since ${view.suspended.since}` +
              (view.suspended.reason === null ? '' : ` (${view.suspended.reason})`),
        ],
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
  usage:
    '  campusgate users export <openId> [--before CURSOR]\n' +
    '  campusgate users export --open-id <openId> [--before CURSOR]',
  options: { before: { type: 'string' } },
  optionHelp: {
    before:
      "the older history: the cursor of a document's next.before (a history over 4 MB is paged)",
  },
  takesOpenId: true,
  async run({ config, values, io }) {
    const openId = values.openId as string
    const before = values.before === undefined ? null : String(values.before)
    return withServices(config, io, async ({ access }) => {
      if (before !== null && !access.isCursor(before)) {
        throw new UsageError('--before must be the next.before of an exported document')
      }
      const document = await access.export({ openId }, cliOrigin(), { before })
      if (document === null) throw unknownUser(openId)
      io.out(`${JSON.stringify(document, null, 2)}\n`)
      return EXIT.ok
    })
  },
}

// Suspension (docs/console.md, "Suspending a user"): the same service calls as the console's
// "Suspend user" and "Restore user". OPENID may be any of the person's openIds.

const suspend: Command = {
  name: 'users suspend',
  summary:
    'end every session of a person and refuse their registrations until restored (data is kept)',
  usage:
    '  campusgate users suspend OPENID [--reason TEXT]\n' +
    '  campusgate users suspend --open-id OPENID [--reason TEXT]',
  options: { reason: { type: 'string' } },
  optionHelp: {
    reason: `why, in the audit trail and the user.suspended event (at most ${SUSPENSION_REASON_MAX} characters)`,
  },
  takesOpenId: true,
  async run({ config, values, io }) {
    const openId = values.openId as string
    const reason = (values.reason as string | undefined) ?? null
    return withServices(config, io, async ({ accounts }) => {
      const done = await accounts.suspend({ openId, reason, origin: cliOrigin() })
      if (done === 'unknown-user') throw unknownUser(openId)
      if (done === 'reason-too-long') {
        throw new UsageError(`--reason is longer than ${SUSPENSION_REASON_MAX} characters`)
      }
      if (done === 'already') {
        io.out(`${openId} is suspended already; nothing changed\n`)
        return EXIT.ok
      }
      io.out(
        `suspended ${openId}: ended ${done.ended} session${done.ended === 1 ? '' : 's'}; ` +
          `registration is refused until campusgate users restore ${openId}\n`,
      )
      return EXIT.ok
    })
  },
}

const restore: Command = {
  name: 'users restore',
  summary: "lift a person's suspension: they may register again",
  usage: '  campusgate users restore OPENID\n  campusgate users restore --open-id OPENID',
  options: {},
  takesOpenId: true,
  async run({ config, values, io }) {
    const openId = values.openId as string
    return withServices(config, io, async ({ accounts }) => {
      const done = await accounts.restore({ openId, origin: cliOrigin() })
      if (done === 'unknown-user') throw unknownUser(openId)
      if (done === 'not-suspended') {
        io.out(`${openId} is not suspended; nothing changed\n`)
        return EXIT.ok
      }
      io.out(`restored ${openId}: they may register again\n`)
      return EXIT.ok
    })
  },
}

export const accountCommands: readonly Command[] = [show, erase, exportData, suspend, restore]
