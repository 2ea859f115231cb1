import { readFileSync } from 'node:fs'

/** The package's `assets/` folder: two levels up from `src/lib/` and from `dist/lib/` alike. */
const ASSETS = new URL('../../assets/', import.meta.url)

/**
 * A file from `assets/` (the pages' CSS, the playground's script), read once when the module
 * that needs it loads: a missing file stops start-up rather than the first page that needs it.
 */
export function readAsset(name: string): string {
  return readFileSync(new URL(name, ASSETS), 'utf8')
}
