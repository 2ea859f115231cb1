/**
 * Installs `folder` (relative to the project) from its own package-lock.json unless that lock is
 * installed already; throws when the install fails. Returns the folder's absolute path.
 */
export function ensureToolFolder(folder: string): string
