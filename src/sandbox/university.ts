import type { FastifyInstance } from 'fastify'
import type { Clock } from '../clock.js'
import { stringField } from '../lib/coerce.js'
import { generateSecret, secretsEqual } from '../lib/secrets.js'
import { sendAuthorisePage, sendAuthoriseProblem } from './authorise-page.js'
import { memberFor, type SandboxMember } from './members.js'

const AUTHORISATION_CODE_TTL_MS = 10 * 60 * 1000
const MAX_STATE_LENGTH = 512
/** Tokens kept in memory for the user-data endpoint; the oldest go first. */
const MAX_TOKENS = 10_000
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
  member: SandboxMember
  expiresAt: number
  used: boolean
}

export type UserDataAnswer =
  ({ ok: true; cn: string; scope_number: number } & SandboxMember) | { ok: false; error: string }

export type TokenAnswer =
  | { ok: true; token: string; client_id: string; state: string; scope: string }
  | { ok: false; error: string }

export interface SandboxUniversity {
  /** Issues a single-use authorisation code for an allowed request, signing in as `member`. */
  issueCode(clientId: string, state: string, member: SandboxMember): string
  /** UCL-API style token exchange: each code works once, for its own client, until it expires. */
  exchange(code: string, clientId: string, clientSecret: string): TokenAnswer
  /** UCL-API style user data: who the token's member is. */
  userData(token: string, clientSecret: string): UserDataAnswer
}

/** The simulated identity provider's state: authorisation codes in memory, gone on restart. */
export function createSandboxUniversity(options: SandboxUniversityOptions): SandboxUniversity {
  const codes = new Map<string, AuthorisationCode>()
  const tokens = new Map<string, SandboxMember>()

  // Used codes are kept until they expire so a replay gets a precise answer.
  function prune(now: number): void {
    for (const [code, entry] of codes) if (entry.expiresAt <= now) codes.delete(code)
  }

  return {
    issueCode(clientId, state, member) {
      const now = options.clock.now().getTime()
      prune(now)
      const code = generateSecret()
      const expiresAt = now + AUTHORISATION_CODE_TTL_MS
      codes.set(code, { clientId, state, member, expiresAt, used: false })
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
      const token = `uclapi-sandbox-${generateSecret()}`
      tokens.set(token, entry.member)
      if (tokens.size > MAX_TOKENS) tokens.delete(tokens.keys().next().value!)
      return {
        ok: true,
        token,
        client_id: clientId,
        state: entry.state,
        scope: '[]',
      }
    },

    userData(token, clientSecret) {
      if (!secretsEqual(clientSecret, options.clientSecret)) {
        return { ok: false, error: 'Client secret incorrect' }
      }
      const member = tokens.get(token)
      if (member === undefined) return { ok: false, error: 'Token does not exist' }
      return { ok: true, ...member, cn: member.upi.toLowerCase(), scope_number: 0 }
    },
  }
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
    if (problem !== null) return sendAuthoriseProblem(request, reply, problem)
    return sendAuthorisePage(request, reply, {
      clientId,
      action: DECISION_PATH,
      hidden: [
        ['client_id', clientId],
        ['state', state],
      ],
      protocol: 'uclapi',
    })
  })

  app.post('/university/authorise/decision', { config, schema }, async (request, reply) => {
    const clientId = stringField(request.body, 'client_id')
    const state = stringField(request.body, 'state')
    const decision = stringField(request.body, 'decision')
    const member = memberFor(stringField(request.body, 'member'), state)
    const problem =
      requestProblem(clientId, state) ??
      (decision === 'allow' || decision === 'deny'
        ? null
        : 'The decision must be allow or deny.') ??
      (member === null ? 'No such member.' : null)
    if (problem !== null || member === null) {
      return sendAuthoriseProblem(request, reply, problem ?? 'No such member.')
    }

    // The seed's callback: result first; on Allow it also carries the code and the client secret.
    const params: [string, string][] =
      decision === 'allow'
        ? [
            ['result', 'allowed'],
            ['code', university.issueCode(clientId, state, member)],
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

  app.get('/university/user/data', { config, schema }, async (request, reply) => {
    const answer = university.userData(
      stringField(request.query, 'token'),
      stringField(request.query, 'client_secret'),
    )
    return reply.code(answer.ok ? 200 : 400).send(answer)
  })
}
