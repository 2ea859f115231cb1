/** The environment as `loadConfig` receives it: `process.env` from `main.ts`, plain objects in tests. */
export type Env = Readonly<Record<string, string | undefined>>

/**
 * Thrown for a bad environment: one line per bad variable, each naming it, all of them at once
 * (an operator fixes a deployment in one restart, not one a variable).
 */
export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(problems.join('\n'))
  }
}

/** One variable's problem, as a reader finds it; `loadConfig` collects them. */
class VariableError extends Error {}

/** A variable's value, trimmed; unset and blank are the same. */
export function read(env: Env, name: string): string | undefined {
  const value = env[name]?.trim()
  return value === undefined || value === '' ? undefined : value
}

export function fail(name: string, why: string): never {
  throw new VariableError(`${name}: ${why}`)
}

/** What is wrong with the environment, one line per variable (the first problem of each). */
export interface Problems {
  /** A rule across variables: records the problem of `name` and goes on. */
  report: (name: string, why: string) => void
  /** Runs a reader; a problem it throws is recorded and `fallback` stands in, so reading goes on. */
  guard: <T>(fallback: T, read: () => T) => T
  /** Throws every problem recorded, if any. */
  done: () => void
}

export function collectProblems(): Problems {
  const lines: string[] = []
  const named = new Set<string>()
  const add = (line: string) => {
    const name = line.slice(0, line.indexOf(':'))
    if (named.has(name)) return
    named.add(name)
    lines.push(line)
  }
  return {
    report: (name, why) => add(`${name}: ${why}`),
    guard: (fallback, read) => {
      try {
        return read()
      } catch (error) {
        if (!(error instanceof VariableError)) throw error
        add(error.message)
        return fallback
      }
    },
    done: () => {
      if (lines.length > 0) throw new ConfigError(lines)
    },
  }
}
