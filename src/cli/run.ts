import { describeError } from '../lib/describe-error.js'
import { VERSION } from '../version.js'
import {
  ConfigError,
  EXIT,
  helpOf,
  loadConfig,
  NotFoundError,
  parse,
  UsageError,
  type Command,
  type Env,
  type Io,
} from './command.js'
import { accountCommands } from './accounts.js'
import { importOriginal } from './import-original.js'
import { backupCommands } from './backups.js'
import { consoleCommands } from './console.js'
import { eventCommands } from './events.js'
import { maintenanceCommands } from './maintenance.js'
import { recordCommands } from './records.js'
import { serve } from './serve.js'
import { sessionCommands } from './sessions.js'

/** Every command of `campusgate`, in the order `--help` lists them (docs/operations.md). */
export const COMMANDS: readonly Command[] = [
  serve,
  ...maintenanceCommands,
  ...backupCommands,
  ...sessionCommands,
  ...accountCommands,
  ...recordCommands,
  ...eventCommands,
  ...consoleCommands,
  importOriginal,
]

function overview(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length))
  return [
    `campusgate ${VERSION} — registration and sessions for a university community mini-program`,
    '',
    'Usage: campusgate <command> [options]    campusgate <command> --help',
    '',
    'Commands:',
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Configuration comes from the environment variables the service reads (README).',
    'Exit codes: 0 done, 1 failed, 2 wrong command line, 3 not found (nothing changed).',
    '',
  ].join('\n')
}

/** The usage of a group of subcommands (`campusgate users`): each one's usage line and summary. */
function groupHelp(group: string, commands: readonly Command[]): string {
  const width = Math.max(...commands.map((c) => c.name.length))
  return [
    `campusgate ${group} — ${commands.map((c) => c.name.slice(group.length + 1)).join(', ')}`,
    '',
    'Usage:',
    ...commands.map((c) => c.usage),
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    `campusgate ${group} <command> --help tells more about one.`,
    'Exit codes: 0 done, 1 failed, 2 wrong command line, 3 not found (nothing changed).',
    '',
  ].join('\n')
}

/** The command named by the first one or two words of `argv`, and the arguments after them. */
function find(argv: readonly string[]): { command: Command; args: string[] } | null {
  for (const words of [2, 1]) {
    const name = argv.slice(0, words).join(' ')
    const command = COMMANDS.find((c) => c.name === name)
    if (command !== undefined) return { command, args: argv.slice(words) }
  }
  return null
}

/**
 * Runs one command line. Resolves to the exit code, or to null while `serve` serves. With no
 * command, `bare` decides: `npm start` serves, the `campusgate` binary prints help.
 */
export async function runCli(
  argv: readonly string[],
  env: Env,
  io: Io,
  bare: 'serve' | 'help',
): Promise<number | null> {
  if (argv.length === 0 && bare === 'help') {
    io.out(overview())
    return EXIT.ok
  }
  if (argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    io.out(overview())
    return EXIT.ok
  }
  if (argv[0] === '--version') {
    io.out(`${VERSION}\n`)
    return EXIT.ok
  }
  const found = argv.length === 0 ? { command: serve, args: [] } : find(argv)
  if (found === null) {
    const name = argv[0] ?? ''
    const group = COMMANDS.filter((c) => c.name.startsWith(`${name} `))
    if (group.length === 0) {
      io.err(`campusgate: unknown command "${name}" (campusgate --help lists them)\n`)
      return EXIT.usage
    }
    if (argv.length === 2 && (argv[1] === '--help' || argv[1] === '-h')) {
      io.out(groupHelp(name, group))
      return EXIT.ok
    }
    io.err(
      (argv.length === 1
        ? `campusgate: ${name} needs one of: ${group.map((c) => c.name).join(', ')}\n\n`
        : `campusgate: unknown command "${argv.slice(0, 2).join(' ')}"\n\n`) +
        groupHelp(name, group),
    )
    return EXIT.usage
  }
  const { command, args } = found
  let values: Record<string, string | boolean | undefined>
  try {
    values = parse(command, args)
  } catch (error) {
    io.err(`campusgate ${command.name}: ${(error as Error).message}\n`)
    return EXIT.usage
  }
  if (values.help === true) {
    io.out(helpOf(command))
    return EXIT.ok
  }
  let config
  try {
    config = loadConfig(env)
  } catch (error) {
    if (error instanceof ConfigError) {
      // One line per bad variable, all of them: the deployment is fixed in one go.
      for (const problem of error.problems) {
        io.err(`campusgate: invalid configuration: ${problem}\n`)
      }
      return EXIT.failure
    }
    throw error
  }
  try {
    return await command.run({ values, config, env, io })
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`campusgate ${command.name}: ${error.message}\n`)
      return EXIT.usage
    }
    if (error instanceof NotFoundError) {
      io.err(`campusgate ${command.name}: ${error.message}\n`)
      return EXIT.notFound
    }
    io.err(`campusgate: ${describeError(error)}\n`)
    return EXIT.failure
  }
}
