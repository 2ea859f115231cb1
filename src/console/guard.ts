import { createHmac, timingSafeEqual } from 'node:crypto'

/**
 * The console's cookie: docs/console.md. Over https the `__Host-` prefix makes the
 * browser refuse it unless Secure, Path=/ and without Domain, so no sibling host can plant one.
 */
export function consoleCookie(publicBaseUrl: string): { name: string; secure: boolean } {
  const secure = publicBaseUrl.startsWith('https:')
  return { name: secure ? '__Host-campusgate-console' : 'campusgate-console', secure }
}

/**
 * The page's CSRF token: an HMAC of the session cookie, so it needs no storage, changes with
 * every session, and cannot be made without the cookie, which script never reads (HttpOnly).
 */
export function csrfTokenOf(cookie: string): string {
  return createHmac('sha256', cookie).update('campusgate-console-csrf').digest('base64url')
}

export function csrfTokenValid(cookie: string, token: unknown): boolean {
  if (typeof token !== 'string' || token.length > 128) return false
  const expected = Buffer.from(csrfTokenOf(cookie))
  const given = Buffer.from(token)
  return given.length === expected.length && timingSafeEqual(given, expected)
}

/**
 * Same origin as docs/console.md says: `Origin` equal to PUBLIC_BASE_URL's origin; where a browser sends no
 * `Origin` or `null` (some do on a form POST after a redirect), `Sec-Fetch-Site: same-origin`.
 */
export function sameOrigin(
  publicOrigin: string,
  origin: string | undefined,
  secFetchSite: string | undefined,
): boolean {
  if (origin !== undefined && origin !== 'null') return origin === publicOrigin
  return secFetchSite === 'same-origin'
}

/**
 * The console's pages load only what this origin serves: no inline script or style, no frame,
 * forms post only here.
 */
export const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'referrer-policy': 'same-origin',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
}

/**
 * The console page to return to after sign-in, from a `next` parameter: a same-origin path under
 * `/console` (not the sign-in page itself), else null. An absolute URL, a `//host` or `\host`
 * target, a path that climbs out of `/console`, or one with control characters is refused: the
 * parameter comes from a link anyone can make (an open redirect otherwise).
 */
export function consoleReturnPath(raw: string): string | null {
  if (raw === '' || raw.length > 2048 || !raw.startsWith('/console')) return null
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f\\]/.test(raw)) return null
  const base = 'http://console.invalid'
  let url: URL
  try {
    url = new URL(raw, base)
  } catch {
    return null
  }
  if (url.origin !== base) return null
  if (url.pathname !== '/console' && !url.pathname.startsWith('/console/')) return null
  if (url.pathname === '/console/sign-in' || url.pathname.startsWith('/console/sign-in/')) {
    return null
  }
  return `${url.pathname}${url.search}`
}
