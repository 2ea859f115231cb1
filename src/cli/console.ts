import { MAX_OPERATOR_NAME, type OperatorRole } from '../console/service.js'
import { EXIT, UsageError, type Command } from './command.js'
import { cliOrigin, withServices } from './maintenance.js'

/** An operator's name, as links carry it and the audit trail shows it. */
function operatorName(raw: unknown, fallback: string): string {
  const name = typeof raw === 'string' ? raw.trim() : fallback
  if (!/^[\p{L}\p{N}._@+-]{1,64}$/u.test(name) || name.length > MAX_OPERATOR_NAME) {
    throw new UsageError(
      '--name must be 1 to 64 letters, digits or . _ @ + - (it names you in the audit trail)',
    )
  }
  return name
}

/** `--role`: what the session may do; an admin's unless said otherwise. */
function roleOf(raw: unknown): OperatorRole {
  if (raw === undefined || raw === 'admin') return 'admin'
  if (raw === 'viewer') return 'viewer'
  throw new UsageError('--role must be admin or viewer')
}

const link: Command = {
  name: 'console link',
  summary: 'print a single-use sign-in address for the operator console, valid 10 minutes',
  usage: '  campusgate console link [--name <name>] [--role admin|viewer]',
  options: { name: { type: 'string' }, role: { type: 'string' } },
  optionHelp: {
    name: 'who signs in with it, for the audit trail (default: your user name)',
    role: 'admin (every action, the default) or viewer (every page, no action)',
  },
  async run({ config, values, io }) {
    const origin = cliOrigin()
    const name = operatorName(values.name, origin.actor.slice('cli:'.length))
    const role = roleOf(values.role)
    if (!config.console.enabled) {
      io.err('the console is off (CONSOLE=off); the link will not open anything until it is on\n')
    }
    return withServices(config, io, async ({ consoleSessions }) => {
      const { token, expiresAt } = await consoleSessions.createLink(name, role, origin)
      // In the fragment: browsers never send it, so no server or proxy log holds the token.
      io.out(`${config.server.publicBaseUrl}/console/sign-in#token=${token}\n`)
      io.err(`valid once, until ${new Date(expiresAt).toISOString()}, for ${name} (${role})\n`)
      return EXIT.ok
    })
  },
}

const revoke: Command = {
  name: 'console revoke',
  summary: 'sign operators out of the console everywhere (one by --name, or --all)',
  usage: '  campusgate console revoke (--name <name> | --all)',
  options: { name: { type: 'string' }, all: { type: 'boolean' } },
  optionHelp: {
    name: 'end the sessions and unused links of this operator',
    all: "end every operator's sessions and unused links",
  },
  async run({ config, values, io }) {
    const all = values.all === true
    if (all === (values.name !== undefined)) throw new UsageError('give --name <name> or --all')
    const name = all ? null : operatorName(values.name, '')
    return withServices(config, io, async ({ consoleSessions }) => {
      const ended = await consoleSessions.revoke(name, cliOrigin())
      io.out(`ended ${ended} console session(s)${name === null ? '' : ` of ${name}`}\n`)
      return EXIT.ok
    })
  },
}

export const consoleCommands: readonly Command[] = [link, revoke]
