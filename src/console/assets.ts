import { createHash } from 'node:crypto'
import { readAsset } from '../lib/assets.js'

/**
 * The console's style sheet and script: files, since its CSP allows nothing inline. Each is
 * named by a hash of its content, so a browser keeps it for a year and a new release, whose
 * files have new names, is fetched at once.
 */
function asset(name: string, extension: string, type: string) {
  const body = readAsset(name)
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 12)
  return { file: `console.${hash}.${extension}`, body, type, etag: `"${hash}"` }
}

export const FILES = [
  asset('console.css', 'css', 'text/css; charset=utf-8'),
  asset('console.js', 'js', 'text/javascript; charset=utf-8'),
] as const

/** Where pages find the assets (layout.ts). */
export const ASSET_PATHS = {
  css: `/console/assets/${FILES[0].file}`,
  js: `/console/assets/${FILES[1].file}`,
} as const
