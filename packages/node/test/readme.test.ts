// Every code block of the kit's README compiles, as an app would compile it (issue 47).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { compileSnippets, snippetsOf } from '../../../test/helpers/readme-snippets.js'

const README = fileURLToPath(new URL('../README.md', import.meta.url))

describe("campusgate-node's README", () => {
  it('has code blocks that all compile under strict TypeScript, ES module and CommonJS', async () => {
    const snippets = await snippetsOf(README)
    assert.ok(snippets.length >= 8, `${snippets.length} code blocks`)
    assert.ok(
      snippets.some((snippet) => snippet.lang === 'js'),
      'the CommonJS one among them',
    )
    const compiled = await compileSnippets(snippets, {
      type: 'module',
      compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', types: ['node'] },
    })
    try {
      assert.equal(compiled.problems, '')
    } finally {
      await compiled.cleanup()
    }
  })
})
