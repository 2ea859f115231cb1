import { realpathSync } from 'node:fs'
import { pathToFileURL } from 'node:url'
import type { Env } from './cli/command.js'
import { runCli } from './cli/run.js'

/**
 * The process entry: `npm start` (`node dist/main.js`, which serves) and the `campusgate`
 * binary (bin/campusgate.js, which prints help when given no command). This is the only module
 * that reads the environment; everything else gets it passed.
 */
export async function main(
  argv: readonly string[],
  env: Env,
  bare: 'serve' | 'help',
): Promise<void> {
  const code = await runCli(
    argv,
    env,
    {
      out: (text) => process.stdout.write(text),
      err: (text) => process.stderr.write(text),
      interactive: process.stdout.isTTY === true,
    },
    bare,
  )
  // null: the server runs on until a signal stops it.
  if (code !== null) process.exitCode = code
}

const entry = process.argv[1]
if (entry !== undefined && import.meta.url === pathToFileURL(realpathSync(entry)).href) {
  main(process.argv.slice(2), process.env, 'serve').catch((error: unknown) => {
    process.stderr.write(`campusgate: ${String(error)}\n`)
    process.exit(1)
  })
}
