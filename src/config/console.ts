import type { Config, ConsoleOperator } from './types.js'
import type { Env, Problems } from './problems.js'
import { list, withDefaults } from './readers.js'

/** An entry of CONSOLE_OPERATORS: `subject-or-email`, or with `:viewer` (or `:admin`) after it. */
function operatorOf(entry: string): ConsoleOperator {
  const match = /^(.+):(viewer|admin)$/.exec(entry)
  return match === null
    ? { id: entry, role: 'admin' }
    : { id: match[1], role: match[2] as ConsoleOperator['role'] }
}

/** CONSOLE (`off` disables the operator console) and CONSOLE_OPERATORS (subjects or emails). */
export function readConsole(env: Env, { guard }: Problems): Config['console'] {
  return Object.freeze({
    enabled: withDefaults(env, { guard }).oneOf('CONSOLE', ['on', 'off'] as const, 'on') === 'on',
    operators: Object.freeze((list(env, 'CONSOLE_OPERATORS') ?? []).map(operatorOf)),
  })
}
