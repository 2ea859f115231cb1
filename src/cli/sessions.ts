import type { DeviceSession } from '../sessions/service.js'
import { EXIT, NotFoundError, UsageError, type Command } from './command.js'
import { cliOrigin, withServices } from './maintenance.js'

// A user's sessions, one per device (docs/sessions.md, "Devices"), as an operator sees and ends
// them: the same service calls as the console's.

function unknownUser(openId: string): NotFoundError {
  return new NotFoundError(`no user with openId ${JSON.stringify(openId)}`)
}

function view(session: DeviceSession) {
  return {
    id: session.id,
    device: session.device,
    createdAt: session.createdAt.toISOString(),
    lastUsedAt: session.lastUsedAt.toISOString(),
    expiresAt: session.expiresAt.toISOString(),
  }
}

const list: Command = {
  name: 'sessions list',
  summary: "a user's live sessions, one per device (no keys)",
  usage:
    '  campusgate sessions list OPENID [--json]\n  campusgate sessions list --open-id OPENID [--json]',
  options: { json: { type: 'boolean' } },
  optionHelp: { json: 'one JSON array instead of lines' },
  takesOpenId: true,
  async run({ config, values, io }) {
    const openId = values.openId as string
    return withServices(config, io, async ({ accounts }) => {
      const user = await accounts.overview(openId)
      if (user === null) throw unknownUser(openId)
      const sessions = user.sessions.map(view)
      if (values.json === true) {
        io.out(`${JSON.stringify(sessions, null, 2)}\n`)
        return EXIT.ok
      }
      if (sessions.length === 0) {
        io.out(`${openId} has no live session\n`)
        return EXIT.ok
      }
      for (const session of sessions) {
        io.out(
          `${session.id}  last used ${session.lastUsedAt}  created ${session.createdAt}  ` +
            `expires ${session.expiresAt}  ${session.device ?? '(no device label)'}\n`,
        )
      }
      return EXIT.ok
    })
  },
}

const revoke: Command = {
  name: 'sessions revoke',
  summary: "end one of a user's sessions, or all of them, exactly as POST /logout does",
  usage:
    '  campusgate sessions revoke OPENID [--session ID | --all]\n' +
    '  campusgate sessions revoke --open-id OPENID [--session ID | --all]',
  options: { session: { type: 'string' }, all: { type: 'boolean' } },
  optionHelp: {
    session: 'the session to end (campusgate sessions list OPENID names them)',
    all: 'end every session of the user',
  },
  takesOpenId: true,
  async run({ config, values, io }) {
    const openId = values.openId as string
    const sessionId = values.session as string | undefined
    if (sessionId !== undefined && values.all === true) {
      throw new UsageError('give --session ID or --all, not both')
    }
    return withServices(config, io, async ({ accounts }) => {
      const user = await accounts.overview(openId)
      if (user === null) throw unknownUser(openId)
      // Without a flag, a user with several devices is not signed out of all of them by a slip.
      if (sessionId === undefined && values.all !== true && user.sessions.length > 1) {
        throw new UsageError(
          `${openId} has ${user.sessions.length} live sessions: name one with --session ID ` +
            `(campusgate sessions list ${openId}) or end them all with --all`,
        )
      }
      const which = sessionId === undefined ? 'all' : { sessionId }
      const ended = await accounts.revoke({ openId, which, origin: cliOrigin() })
      if (ended === 'unknown-user') throw unknownUser(openId)
      if (ended === 0) {
        throw new NotFoundError(
          sessionId === undefined
            ? `${openId} has no live session; nothing changed`
            : `${openId} has no live session ${JSON.stringify(sessionId)}; nothing changed`,
        )
      }
      io.out(
        `revoked ${ended} session${ended === 1 ? '' : 's'} of ${openId}; ` +
          `${ended === 1 ? 'its key is' : 'their keys are'} void\n`,
      )
      return EXIT.ok
    })
  },
}

export const sessionCommands: readonly Command[] = [list, revoke]
