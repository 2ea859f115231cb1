// The code blocks of a README, compiled as an app would compile them: each its own module in a
// throwaway app folder that sees this repository's node_modules (the kits among them).
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const run = promisify(execFile)
const root = fileURLToPath(new URL('../../', import.meta.url))
const tsc = join(root, 'node_modules/typescript/bin/tsc')

export interface Snippet {
  /** `ts` or `js`, as the fence names it. */
  lang: 'ts' | 'js'
  /** The code, its list indentation removed. */
  code: string
  /** The README line the fence opens on (1-based), for messages. */
  line: number
}

/** Every ```ts and ```js block of the file, indented ones (inside a list) included. */
export async function snippetsOf(readme: string): Promise<Snippet[]> {
  const text = await readFile(readme, 'utf8')
  const snippets: Snippet[] = []
  const fence = /^( *)```(ts|js)\n([\s\S]*?)^\1```$/gm
  for (const match of text.matchAll(fence)) {
    const indent = match[1].length
    const code = match[3]
      .split('\n')
      .map((line) => line.slice(Math.min(indent, line.length - line.trimStart().length)))
      .join('\n')
    const line = text.slice(0, match.index).split('\n').length
    snippets.push({ lang: match[2] as 'ts' | 'js', code, line })
  }
  return snippets
}

export interface CompileSetup {
  /** The app's package.json `type`. */
  type: 'module' | 'commonjs'
  compilerOptions: Record<string, unknown>
  /** Written into the folder first, by file name (a declaration file, say). */
  extraFiles?: Record<string, string>
}

/**
 * Compiles every snippet under strict TypeScript (js ones as checked JavaScript, CommonJS), each
 * as its own module. Resolves with the compiler's complaints, each prefixed by the README line of
 * its snippet; an empty string when all compile. `emitTo`, when given, keeps the output there.
 */
export async function compileSnippets(
  snippets: Snippet[],
  setup: CompileSetup,
  emitTo?: string,
): Promise<{ problems: string; dir: string; files: string[]; cleanup(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'campusgate-readme-'))
  await symlink(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir')
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'app', type: setup.type }))
  for (const [name, content] of Object.entries(setup.extraFiles ?? {})) {
    await writeFile(join(dir, name), content)
  }
  const files = snippets.map((snippet, index) =>
    snippet.lang === 'js' ? `snippet-${index}.cjs` : `snippet-${index}.ts`,
  )
  for (const [index, snippet] of snippets.entries()) {
    // A block without import or export is still its own module, not one global script.
    const code =
      /^\s*(import|export)\b/m.test(snippet.code) || snippet.lang === 'js'
        ? snippet.code
        : `${snippet.code}\nexport {}\n`
    await writeFile(join(dir, files[index]), code)
  }
  await writeFile(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        target: 'es2022',
        strict: true,
        allowJs: true,
        checkJs: true,
        esModuleInterop: true,
        skipLibCheck: true,
        ...(emitTo === undefined ? { noEmit: true } : { outDir: emitTo }),
        ...setup.compilerOptions,
      },
      files: [...files, ...Object.keys(setup.extraFiles ?? {})],
    }),
  )
  const problems = await run(process.execPath, [tsc, '-p', dir]).then(
    () => '',
    (error: { stdout?: string; stderr?: string }) =>
      `${error.stdout ?? ''}${error.stderr ?? ''}`.replace(
        /snippet-(\d+)\.(c?ts|cjs)/g,
        (_all, index: string) => `README line ${snippets[Number(index)].line}`,
      ),
  )
  return {
    problems,
    dir,
    files,
    cleanup: () => rm(dir, { recursive: true, force: true }),
  }
}
