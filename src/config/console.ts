import type { Config } from './types.js'
import type { Env, Problems } from './problems.js'
import { list, withDefaults } from './readers.js'

/** CONSOLE (`off` disables the operator console) and CONSOLE_OPERATORS (subjects or emails). */
export function readConsole(env: Env, { guard }: Problems): Config['console'] {
  return Object.freeze({
    enabled: withDefaults(env, { guard }).oneOf('CONSOLE', ['on', 'off'] as const, 'on') === 'on',
    operators: Object.freeze(list(env, 'CONSOLE_OPERATORS') ?? []),
  })
}
