import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { resolve } from 'node:path'
import { it } from 'node:test'

// The built service reads assets/ relative to itself, not to the directory it is started from
// (CLI tests and this one need `npm run build` first).
it('finds the page CSS and the playground script from dist/, started anywhere', () => {
  const dist = resolve('dist/lib/html.js')
  const inlined = execFileSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `const { htmlPage } = await import(${JSON.stringify(dist)}); process.stdout.write(htmlPage('t', ''))`,
    ],
    { cwd: tmpdir(), encoding: 'utf8' },
  )
  assert.ok(inlined.includes(`<style>${readFileSync('assets/page.css', 'utf8')}</style>`))
  execFileSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `await import(${JSON.stringify(resolve('dist/sandbox/routes.js'))})`,
    ],
    { cwd: tmpdir() },
  )
})
