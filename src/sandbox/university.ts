import type { FastifyInstance, FastifyReply } from 'fastify'
import type { Clock } from '../clock.js'
import { sendHtml } from '../http/html.js'
import { escapeHtml, htmlPage } from '../lib/html.js'
import { stringField } from '../lib/coerce.js'
import { generateSecret, secretsEqual } from '../lib/secrets.js'

const AUTHORISATION_CODE_TTL_MS = 10 * 60 * 1000
const MAX_STATE_LENGTH = 512
const DECISION_PATH = '/_sandbox/university/authorise/decision'

export interface SandboxUniversityOptions {
  clientId: string
  clientSecret: string
  callbackUrl: () => string
  clock: Clock
}

interface AuthorisationCode {
  clientId: string
  state: string
  expiresAt: number
  used: boolean
}

export type TokenAnswer =
  | { ok: true; token: string; client_id: string; state: string; scope: string }
  | { ok: false; error: string }

export interface SandboxUniversity {
  /** Issues a single-use authorisation code for an allowed request. */
  issueCode(clientId: string, state: string): string
  /** UCL-API style token exchange: each code works once, for its own client, until it expires. */
  exchange(code: string, clientId: string, clientSecret: string): TokenAnswer
}

/** The simulated identity provider's state: authorisation codes in memory, gone on restart. */
export function createSandboxUniversity(options: SandboxUniversityOptions): SandboxUniversity {
  const codes = new Map<string, AuthorisationCode>()

  // Used codes are kept until they expire so a replay gets a precise answer.
  function prune(now: number): void {
    for (const [code, entry] of codes) if (entry.expiresAt <= now) codes.delete(code)
  }

  return {
    issueCode(clientId, state) {
      const now = options.clock.now().getTime()
      prune(now)
      const code = generateSecret()
      codes.set(code, { clientId, state, expiresAt: now + AUTHORISATION_CODE_TTL_MS, used: false })
      return code
    },

    exchange(code, clientId, clientSecret) {
      // Both checks always run, so a wrong client_id costs the same time as a wrong secret.
      const idOk = secretsEqual(clientId, options.clientId)
      const secretOk = secretsEqual(clientSecret, options.clientSecret)
      if (!idOk || !secretOk) return { ok: false, error: 'invalid client_id or client_secret' }
      prune(options.clock.now().getTime())
      const entry = codes.get(code)
      if (entry === undefined || entry.clientId !== clientId) {
        return { ok: false, error: 'code is invalid or has expired' }
      }
      if (entry.used) return { ok: false, error: 'code has already been used' }
      entry.used = true
      return {
        ok: true,
        token: `uclapi-sandbox-${generateSecret()}`,
        client_id: clientId,
        state: entry.state,
        scope: '[]',
      }
    },
  }
}

function errorPage(reply: FastifyReply, message: string): FastifyReply {
  return sendHtml(
    reply,
    400,
    htmlPage('University sign-in (sandbox)', `<p>${escapeHtml(message)}</p>`),
  )
}

/** Registers the simulated identity provider's routes (under the caller's prefix). */
export function universityRoutes(app: FastifyInstance, options: SandboxUniversityOptions): void {
  const university = createSandboxUniversity(options)
  const config = { versionedMediaType: false }
  const schema = { hide: true }

  function requestProblem(clientId: string, state: string): string | null {
    if (clientId !== options.clientId)
      return 'Unknown client_id: no such application is registered.'
    if (state === '' || state.length > MAX_STATE_LENGTH)
      return 'The request carries no valid state.'
    return null
  }

  app.get('/university/authorise', { config, schema }, async (request, reply) => {
    const clientId = stringField(request.query, 'client_id')
    const state = stringField(request.query, 'state')
    const problem = requestProblem(clientId, state)
    if (problem !== null) return errorPage(reply, problem)
    const hidden = (name: string, value: string) =>
      `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`
    const body = `<p>The application <strong>${escapeHtml(clientId)}</strong> asks to confirm that you
are a member of the university.</p>
<p>This is the sandbox identity provider: no password is asked, your choice is all it takes.</p>
<form method="post" action="${DECISION_PATH}" enctype="application/x-www-form-urlencoded">
${hidden('client_id', clientId)}
${hidden('state', state)}
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>`
    return sendHtml(reply, 200, htmlPage('University sign-in (sandbox)', body))
  })

  app.post('/university/authorise/decision', { config, schema }, async (request, reply) => {
    const clientId = stringField(request.body, 'client_id')
    const state = stringField(request.body, 'state')
    const decision = stringField(request.body, 'decision')
    const problem =
      requestProblem(clientId, state) ??
      (decision === 'allow' || decision === 'deny' ? null : 'The decision must be allow or deny.')
    if (problem !== null) return errorPage(reply, problem)

    // The seed's callback: result first; on Allow it also carries the code and the client secret.
    const params: [string, string][] =
      decision === 'allow'
        ? [
            ['result', 'allowed'],
            ['code', university.issueCode(clientId, state)],
            ['client_id', clientId],
            ['state', state],
            ['client_secret', options.clientSecret],
          ]
        : [
            ['result', 'denied'],
            ['client_id', clientId],
            ['state', state],
          ]
    const location = new URL(options.callbackUrl())
    for (const [name, value] of params) location.searchParams.append(name, value)
    return reply
      .header('cache-control', 'no-store')
      .header('referrer-policy', 'no-referrer')
      .redirect(location.toString(), 302)
  })

  app.get('/university/token', { config, schema }, async (request, reply) => {
    const code = stringField(request.query, 'code')
    const clientId = stringField(request.query, 'client_id')
    const clientSecret = stringField(request.query, 'client_secret')
    if (code === '' || clientId === '' || clientSecret === '') {
      return reply
        .code(400)
        .send({ ok: false, error: 'code, client_id and client_secret are required' })
    }
    const answer = university.exchange(code, clientId, clientSecret)
    return reply.code(answer.ok ? 200 : 400).send(answer)
  })
}
