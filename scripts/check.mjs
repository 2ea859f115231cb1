// npm run check: the type check and the linter side by side (each a single-threaded process, one
// a core), then the import rules and the formatting. The kits are built once first: both read
// their build, and two builds at once would rewrite the files the other reads. Each step's output
// is printed whole when it ends, so the two never interleave; the check fails if any step fails.
import { spawn, spawnSync } from 'node:child_process'

/** Runs `npm run --silent SCRIPT`, its output held; resolves with its status and output. */
function run(script) {
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', '--silent', script], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.setEncoding('utf8').on('data', (chunk) => (output += chunk))
    child.stderr.setEncoding('utf8').on('data', (chunk) => (output += chunk))
    child.on('close', (status) => resolve({ script, status, output }))
  })
}

function report({ script, status, output }) {
  process.stdout.write(`\n> ${script}${status === 0 ? '' : ` (exit ${status})`}\n${output}`)
  return status === 0
}

const tools = spawnSync('npm', ['run', '--silent', 'tools'], { stdio: 'inherit' })
if (tools.status !== 0) process.exit(1)
const together = await Promise.all([run('typecheck:tsc'), run('lint:eslint')])
let ok = together.map(report).every(Boolean)
for (const script of ['deps', 'format:check']) ok = report(await run(script)) && ok
process.exit(ok ? 0 : 1)
