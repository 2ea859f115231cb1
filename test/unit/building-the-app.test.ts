// docs/building-the-app.md's code blocks compile as pasted: the mini-program's as the developer
// tools compile a mini-program, the backend's as an ES module of a Node.js app.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { compileSnippets, snippetsOf } from '../helpers/readme-snippets.js'

const PAGE = fileURLToPath(new URL('../../docs/building-the-app.md', import.meta.url))

describe("docs/building-the-app.md's code", () => {
  it('compiles under strict TypeScript, each block where it runs', async () => {
    const snippets = await snippetsOf(PAGE)
    const miniProgram = snippets.filter((snippet) =>
      snippet.code.includes('campusgate-miniprogram'),
    )
    const backend = snippets.filter((snippet) => snippet.code.includes('campusgate-node'))
    assert.equal(
      miniProgram.length + backend.length,
      snippets.length,
      'every block is one of the two',
    )
    assert.ok(miniProgram.length >= 1 && backend.length >= 1)
    for (const [blocks, setup] of [
      [
        miniProgram,
        {
          type: 'commonjs',
          compilerOptions: {
            module: 'node16',
            moduleResolution: 'node16',
            target: 'es2017',
            lib: ['es2017'],
            types: ['miniprogram-api-typings'],
          },
        },
      ],
      [
        backend,
        {
          type: 'module',
          compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', types: ['node'] },
        },
      ],
    ] as const) {
      const compiled = await compileSnippets([...blocks], setup)
      try {
        assert.equal(compiled.problems, '')
      } finally {
        await compiled.cleanup()
      }
    }
  })
})
