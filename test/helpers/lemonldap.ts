import { execFile } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

/**
 * LemonLDAP::NG from Debian's packages (scripts/lemonldap.sh): an independent CAS server and SAML
 * IdP on a loopback port, with its demo users (dwho, rtyler, msmith: the password is the login).
 */

const SCRIPT = fileURLToPath(new URL('../../scripts/lemonldap.sh', import.meta.url))
const run = promisify(execFile)

export interface LemonLdap {
  /** The portal, e.g. http://127.0.0.1:40123 (CAS under /cas, SAML metadata at /saml/metadata). */
  url: string
  close(): Promise<void>
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => resolvePort(typeof address === 'object' && address ? address.port : 0))
    })
  })
}

/**
 * Starts a portal whose SAML service provider is campusgate at `spBase` (its entity id
 * `${spBase}/authorize/university/saml`, its ACS `${spBase}/authorize/university/callback`).
 */
export async function startLemonLdap(spBase: string): Promise<LemonLdap> {
  const dir = mkdtempSync(join(tmpdir(), 'campusgate-lemonldap-'))
  const port = await freePort()
  const { stdout } = await run('bash', [SCRIPT, 'start', dir, String(port), spBase], {
    timeout: 90_000,
  })
  return {
    url: stdout.trim(),
    close: async () => {
      await run('bash', [SCRIPT, 'stop', dir], { timeout: 30_000 })
    },
  }
}

/** A browser without JavaScript: one cookie jar for one host, redirects followed by hand. */
export class Browser {
  private readonly cookies = new Map<string, string>()

  private remember(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';')
      const equals = pair.indexOf('=')
      const name = pair.slice(0, equals).trim()
      const value = pair.slice(equals + 1).trim()
      if (value === '' || /expires=Wed, 21 Oct 2015/i.test(line)) this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
  }

  private cookieHeader(): Record<string, string> {
    if (this.cookies.size === 0) return {}
    return {
      cookie: [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; '),
    }
  }

  async get(url: string, headers: Record<string, string> = {}): Promise<Response> {
    const response = await fetch(url, {
      redirect: 'manual',
      headers: { ...headers, ...this.cookieHeader() },
    })
    this.remember(response)
    return response
  }

  async post(
    url: string,
    form: Record<string, string>,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    const response = await fetch(url, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        ...headers,
        ...this.cookieHeader(),
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams(form).toString(),
    })
    this.remember(response)
    return response
  }
}

/** The hidden fields of the first form of `html` (LemonLDAP::NG's login form, an auto-post form). */
export function hiddenFields(html: string): Record<string, string> {
  const fields: Record<string, string> = {}
  for (const match of html.matchAll(/<input\b[^>]*>/gi)) {
    const tag = match[0]
    if (!/type=["']?hidden/i.test(tag)) continue
    const name = /\bname=["']([^"']*)["']/i.exec(tag)?.[1]
    const value = /\bvalue=["']([^"']*)["']/i.exec(tag)?.[1]
    if (name !== undefined) fields[name] = decodeEntities(value ?? '')
  }
  return fields
}

/** The action of the first form of `html`. */
export function formAction(html: string): string | undefined {
  const action = /<form\b[^>]*\baction=["']([^"']*)["']/i.exec(html)?.[1]
  return action === undefined ? undefined : decodeEntities(action)
}

function decodeEntities(text: string): string {
  return text
    .replace(/&#x([0-9a-f]+);/gi, (_, hex: string) => String.fromCodePoint(parseInt(hex, 16)))
    .replace(/&#(\d+);/g, (_, dec: string) => String.fromCodePoint(Number(dec)))
    .replace(/&quot;/g, '"')
    .replace(/&#39;|&apos;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')
}

/**
 * Signs in at LemonLDAP::NG's portal from a protocol's login URL (CAS `/cas/login`, SAML SSO),
 * as `user` with the demo password: GET the login form, POST it, and return the answer to the POST.
 */
export async function signInAt(
  browser: Browser,
  loginUrl: string,
  user: string,
): Promise<Response> {
  const page = await browser.get(loginUrl)
  if (page.status !== 200) throw new Error(`LemonLDAP::NG login page: HTTP ${page.status}`)
  const html = await page.text()
  const action = formAction(html)
  const target =
    action === undefined || action === '#' ? loginUrl : new URL(action, loginUrl).toString()
  return browser.post(target, { ...hiddenFields(html), user, password: user })
}
