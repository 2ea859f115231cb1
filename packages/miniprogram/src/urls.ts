// Where the session key may go: campusgate (a path under baseUrl) and the origins the app lists in
// `backends`. No URL class: base libraries of the mini-program platforms do not all have one.

/** `scheme://authority` of an absolute http(s) URL; no user info, no backslash, no whitespace. */
const ABSOLUTE = /^(https?):\/\/([^/?#\\@\s]+)([/?#][^\s]*)?$/i

/** The origin an http(s) URL names, its default port left out; null when it names none. */
export function originOf(url: string): string | null {
  const match = ABSOLUTE.exec(url)
  if (match === null) return null
  const scheme = match[1].toLowerCase()
  const authority = match[2].toLowerCase()
  const defaultPort = scheme === 'https' ? ':443' : ':80'
  const host = authority.endsWith(defaultPort) ? authority.slice(0, -defaultPort.length) : authority
  return `${scheme}://${host}`
}

/** The origins of the `backends` option; throws a TypeError naming one that is not an origin. */
export function backendOrigins(backends: readonly string[] | undefined): string[] {
  if (backends === undefined) return []
  if (!Array.isArray(backends)) {
    throw new TypeError(
      'createCampusgate: backends is a list of origins like https://forum.example.edu',
    )
  }
  return backends.map((backend: unknown) => {
    // An origin, with or without a final slash: nothing after the authority.
    const bare = typeof backend === 'string' ? backend.replace(/\/$/, '') : ''
    const origin = /^https?:\/\/[^/?#]+$/i.test(bare) ? originOf(bare) : null
    if (origin === null) {
      throw new TypeError(
        `createCampusgate: backends: ${JSON.stringify(backend)} is not an origin like https://forum.example.edu`,
      )
    }
    return origin
  })
}

/**
 * The full URL of a request: a path under `baseUrl` (campusgate), or an absolute URL under one of
 * `backends`; null for anything else, which the key must never reach.
 */
export function resolveUrl(
  url: unknown,
  baseUrl: string,
  backends: readonly string[],
): { url: string; toCampusgate: boolean } | null {
  if (typeof url !== 'string' || hasWhitespaceOrControl(url)) return null
  if (url.startsWith('/')) return { url: baseUrl + url, toCampusgate: true }
  const origin = originOf(url)
  if (origin === null || !backends.includes(origin)) return null
  return { url, toCampusgate: false }
}

/** Whitespace or a control character: never part of a URL the kit should send. */
function hasWhitespaceOrControl(url: string): boolean {
  if (/\s/.test(url)) return true
  for (let i = 0; i < url.length; i += 1) {
    const code = url.charCodeAt(i)
    if (code < 0x20 || code === 0x7f) return true
  }
  return false
}
