import { readFileSync } from 'node:fs'

/** The release running: the package's version and the commit it was built from. */
export interface BuildInfo {
  version: string
  /** The commit (`git rev-parse HEAD` at the build, or the image's REVISION build argument). */
  revision: string
}

/**
 * Read once at start: the version from package.json (beside src/ and dist/), the revision from
 * build-info.json, which the build writes into dist/ (scripts/build.mjs, the Dockerfile);
 * `unknown` where there is none (src/ run through tsx).
 */
export function readBuildInfo(
  packageJson: URL = new URL('../../package.json', import.meta.url),
  buildInfoJson: URL = new URL('../build-info.json', import.meta.url),
): BuildInfo {
  const { version } = JSON.parse(readFileSync(packageJson, 'utf8')) as { version: string }
  let revision = 'unknown'
  try {
    const written = JSON.parse(readFileSync(buildInfoJson, 'utf8')) as { revision?: unknown }
    if (typeof written.revision === 'string' && written.revision !== '') {
      revision = written.revision
    }
  } catch {
    // Not built (src/ under tsx): the revision is unknown.
  }
  return { version, revision }
}
