import { parseArgs, type ParseArgsConfig } from 'node:util'
import { ConfigError, loadConfig, type Config } from '../config.js'

/** Exit codes of every command (README, docs/operations.md). */
export const EXIT = {
  ok: 0,
  /** Something failed: the database, a bad configuration, an unexpected error. */
  failure: 1,
  /** The command line is wrong: unknown command or option, missing argument. */
  usage: 2,
  /** The user, session or mail named does not exist; nothing was changed. */
  notFound: 3,
} as const

export type Env = Readonly<Record<string, string | undefined>>

export interface Io {
  out(text: string): void
  err(text: string): void
  /** Whether stdout is a terminal (progress lines and human-readable logs then). */
  interactive: boolean
}

export type Options = NonNullable<ParseArgsConfig['options']>

export interface CommandContext {
  values: Record<string, string | boolean | undefined>
  config: Config
  env: Env
  io: Io
}

export interface Command {
  /** One or two words: `migrate`, `users erase`. */
  name: string
  summary: string
  /** The lines after `Usage:` in `--help`. */
  usage: string
  options: Options
  /** One line per option for `--help`. */
  optionHelp?: Record<string, string>
  /** The option names that must be given. */
  required?: string[]
  /** Names of the arguments that follow the command, in order, all required: `backup PATH`. */
  positionals?: readonly string[]
  /**
   * The command names a user: by the openId after it (`sessions revoke OPENID`) or by
   * `--open-id OPENID`, either way, for every such command; `run` finds it in `values.openId`.
   */
  takesOpenId?: boolean
  /** Resolves to the exit code; `serve` resolves only once the server listens, with null. */
  run(context: CommandContext): Promise<number | null>
}

/** Thrown for a wrong command line: the message goes to stderr with exit code 2. */
export class UsageError extends Error {}

/** Thrown when the named thing does not exist: the message goes to stderr with exit code 3. */
export class NotFoundError extends Error {}

export function parse(
  command: Command,
  args: string[],
): Record<string, string | boolean | undefined> {
  let values: Record<string, string | boolean | undefined | (string | boolean)[]>
  let positionals: string[]
  const names = command.positionals ?? []
  const openIdOption = command.takesOpenId === true ? OPEN_ID_OPTION : {}
  try {
    ;({ values, positionals } = parseArgs({
      args,
      options: { ...command.options, ...openIdOption, help: { type: 'boolean', short: 'h' } },
      allowPositionals: names.length > 0 || command.takesOpenId === true,
      strict: true,
    }))
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
  if (values.help === true) return { help: true }
  if (command.takesOpenId === true) {
    const given = values['open-id'] as string | undefined
    const after = positionals[0]
    if (after !== undefined) positionals = positionals.slice(1)
    if (given !== undefined && after !== undefined && given !== after) {
      throw new UsageError(`two openIds given ("${after}" and --open-id "${given}"); give one`)
    }
    const openId = after ?? given
    if (openId === undefined || openId === '') {
      throw new UsageError('the openId is required: after the command or as --open-id <openId>')
    }
    values.openId = openId
  }
  if (positionals.length > names.length) {
    throw new UsageError(`unexpected argument "${positionals[names.length]}"`)
  }
  names.forEach((name, index) => {
    const value = positionals[index]
    if (value === undefined || value === '') throw new UsageError(`${name} is required`)
    values[name] = value
  })
  for (const name of command.required ?? []) {
    if (values[name] === undefined || values[name] === '') {
      throw new UsageError(`--${name} is required`)
    }
  }
  return values as Record<string, string | boolean | undefined>
}

/** The option of a command that names a user (`takesOpenId`). */
const OPEN_ID_OPTION = { 'open-id': { type: 'string' } } as const

export function helpOf(command: Command): string {
  const lines = [`campusgate ${command.name} — ${command.summary}`, '', 'Usage:', command.usage]
  const options = Object.entries<Options[string]>({
    ...(command.takesOpenId === true ? OPEN_ID_OPTION : {}),
    ...command.options,
  })
  const optionHelp: Record<string, string> = {
    ...(command.takesOpenId === true
      ? { 'open-id': "the user's messenger openId (or give it after the command)" }
      : {}),
    ...command.optionHelp,
  }
  lines.push('', 'Options:')
  for (const [name, option] of options) {
    const value = option.type === 'string' ? ` <${name}>` : ''
    const short = option.short === undefined ? '    ' : `-${option.short}, `
    const flag = `  ${short}--${name}${value}`
    lines.push(`${flag.padEnd(26)}  ${optionHelp[name] ?? ''}`.trimEnd())
  }
  lines.push(`${'  -h, --help'.padEnd(26)}  this text`)
  lines.push(
    '',
    'Configuration comes from the same environment variables as the service (DATABASE_URL, …).',
    'Exit codes: 0 done, 1 failed, 2 wrong command line, 3 not found (nothing changed).',
    '',
  )
  return lines.join('\n')
}

export { ConfigError, loadConfig }
