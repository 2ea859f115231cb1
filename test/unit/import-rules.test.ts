import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { cruise, type ICruiseResult, type IForbiddenRuleType } from 'dependency-cruiser'

// The project's own rules (.dependency-cruiser.cjs, what `npm run deps` checks), run over a small
// tree of modules named as src/'s are, so that each test shows an edge the rules refuse or allow.
const rules = createRequire(import.meta.url)('../../.dependency-cruiser.cjs') as {
  forbidden: IForbiddenRuleType[]
}

const RULE = 'account-steps-through-changes'

describe('the import rules: only the unit of work runs the steps of an account change', () => {
  let dir = ''
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'campusgate-import-rules-'))
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  /** The edges from one module to another that `RULE` refuses, in a tree of these modules. */
  async function refusedIn(modules: Record<string, string>): Promise<string[]> {
    const root = mkdtempSync(join(dir, 'tree-'))
    for (const [path, text] of Object.entries(modules)) {
      mkdirSync(dirname(join(root, path)), { recursive: true })
      writeFileSync(join(root, path), text)
    }
    const result = await cruise(['src'], {
      baseDir: root,
      ruleSet: { forbidden: rules.forbidden },
      validate: true,
      tsPreCompilationDeps: true,
    })
    const output = result.output as ICruiseResult
    return output.summary.violations
      .filter((violation) => violation.rule.name === RULE)
      .map((violation) => `${violation.from} -> ${violation.to}`)
      .sort()
  }

  const steps = {
    'src/accounts/lifecycle.ts': 'export const register = 1\n',
    'src/accounts/university.ts':
      "import { register } from './lifecycle'\nexport const link = register\n",
    'src/accounts/import.ts':
      "import { register } from './lifecycle'\nexport const bring = register\n",
    'src/accounts/changes.ts':
      "import { register } from './lifecycle'\nimport { link } from './university'\n" +
      "import { bring } from './import'\nexport const changes = [register, link, bring]\n",
  }

  it('lets changes.ts import the steps, and the steps one another', async () => {
    assert.deepEqual(await refusedIn(steps), [])
  })

  it('refuses any other module the steps, from another folder or its own, types included', async () => {
    const refused = await refusedIn({
      ...steps,
      'src/university/service.ts':
        "import { link } from '../accounts/university'\nexport { link }\n",
      'src/sessions/service.ts':
        "import type { register } from '../accounts/lifecycle'\nexport type R = typeof register\n",
      'src/accounts/users.ts': "import { bring } from './import'\nexport { bring }\n",
      'src/console/routes.ts':
        "import { changes } from '../accounts/changes'\nexport { changes }\n",
    })
    assert.deepEqual(refused, [
      'src/accounts/users.ts -> src/accounts/import.ts',
      'src/sessions/service.ts -> src/accounts/lifecycle.ts',
      'src/university/service.ts -> src/accounts/university.ts',
    ])
  })
})
