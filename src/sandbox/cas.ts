import type { FastifyInstance, FastifyReply } from 'fastify'
import type { Clock } from '../clock.js'
import { stringField } from '../lib/coerce.js'
import { escapeHtml } from '../lib/html.js'
import { generateSecret } from '../lib/secrets.js'
import { sendAuthorisePage, sendAuthoriseProblem } from './authorise-page.js'
import { memberFor, type SandboxMember } from './members.js'

/** CAS 3.0 §3.1.1 asks for tickets of five minutes at most; the sandbox's live one minute. */
const TICKET_TTL_MS = 60_000
const MAX_TICKETS = 10_000
const CAS_NAMESPACE = 'http://www.yale.edu/tp/cas'

export interface SandboxCasOptions {
  /** campusgate's callback: every service the server accepts starts with it. */
  callbackUrl: () => string
  clock: Clock
}

interface Ticket {
  member: SandboxMember
  service: string
  expiresAt: number
}

/** The attributes the sandbox releases, as a university CAS server does. */
function attributesOf(member: SandboxMember): [string, string][] {
  return [
    ['uid', member.upi],
    ['mail', member.email],
    ['displayName', member.full_name],
    ['cn', member.full_name],
    ['givenName', member.given_name],
    ['eduPersonAffiliation', member.is_student ? 'student' : 'staff'],
    ['eduPersonAffiliation', 'member'],
  ]
}

function serviceResponse(inner: string): string {
  return `<cas:serviceResponse xmlns:cas="${CAS_NAMESPACE}">\n${inner}\n</cas:serviceResponse>\n`
}

function failure(code: string, text: string): string {
  return serviceResponse(
    `  <cas:authenticationFailure code="${code}">${escapeHtml(text)}</cas:authenticationFailure>`,
  )
}

/**
 * A CAS server for the sandbox (`UNIVERSITY_PROTOCOL=cas` with no UNIVERSITY_CAS_URL): `/cas/login`
 * with the Allow / Deny page and its choice of member, and ticket validation by CAS 2
 * (`/cas/serviceValidate`, no attributes) and CAS 3 (`/cas/p3/serviceValidate`, attributes).
 * Service tickets live a minute and validate once, whatever the outcome (CAS 3.0 §3.1.1).
 */
export function casRoutes(app: FastifyInstance, options: SandboxCasOptions): void {
  const tickets = new Map<string, Ticket>()
  const config = { versionedMediaType: false }
  const schema = { hide: true }

  /** Only campusgate's own callback is a service of this server. */
  function serviceProblem(service: string): string | null {
    const callback = options.callbackUrl()
    if (service === '') return 'service is missing.'
    if (service !== callback && !service.startsWith(`${callback}?`)) {
      return 'service is not registered with this CAS server.'
    }
    return null
  }

  app.get('/cas/login', { config, schema }, async (request, reply) => {
    const service = stringField(request.query, 'service')
    const problem = serviceProblem(service)
    if (problem !== null) return sendAuthoriseProblem(request, reply, problem)
    return sendAuthorisePage(request, reply, {
      clientId: new URL(service).host,
      action: '/_sandbox/cas/login/decision',
      hidden: [['service', service]],
      protocol: 'cas',
    })
  })

  app.post('/cas/login/decision', { config, schema }, async (request, reply) => {
    const service = stringField(request.body, 'service')
    const problem = serviceProblem(service)
    // The member of one's own is derived from the service, which names the messenger user.
    const member = memberFor(stringField(request.body, 'member'), service)
    if (problem !== null || member === null) {
      return sendAuthoriseProblem(request, reply, problem ?? 'No such member.')
    }
    const back = new URL(service)
    // CAS has no "deny" answer: the user simply comes back without a ticket.
    if (stringField(request.body, 'decision') === 'allow') {
      const ticket = `ST-${generateSecret()}`
      tickets.set(ticket, {
        member,
        service,
        expiresAt: options.clock.now().getTime() + TICKET_TTL_MS,
      })
      if (tickets.size > MAX_TICKETS) tickets.delete(tickets.keys().next().value!)
      back.searchParams.set('ticket', ticket)
    }
    return reply.header('cache-control', 'no-store').redirect(back.toString(), 302)
  })

  function validate(version: 2 | 3) {
    return async (request: { query: unknown }, reply: FastifyReply): Promise<FastifyReply> => {
      const service = stringField(request.query, 'service')
      const ticketId = stringField(request.query, 'ticket')
      reply.header('cache-control', 'no-store').type('application/xml; charset=utf-8')
      if (service === '' || ticketId === '') {
        return reply.send(failure('INVALID_REQUEST', 'service and ticket are required'))
      }
      const ticket = tickets.get(ticketId)
      // A ticket is spent by its first validation, whether that succeeds or not.
      tickets.delete(ticketId)
      if (ticket === undefined || ticket.expiresAt <= options.clock.now().getTime()) {
        return reply.send(failure('INVALID_TICKET', 'Ticket not recognized'))
      }
      if (ticket.service !== service) {
        return reply.send(failure('INVALID_SERVICE', 'Ticket was issued for another service'))
      }
      const attributes =
        version === 3
          ? `\n    <cas:attributes>\n${attributesOf(ticket.member)
              .map(([name, value]) => `      <cas:${name}>${escapeHtml(value)}</cas:${name}>`)
              .join('\n')}\n    </cas:attributes>`
          : ''
      return reply.send(
        serviceResponse(
          `  <cas:authenticationSuccess>\n    <cas:user>${escapeHtml(ticket.member.upi)}</cas:user>${attributes}\n  </cas:authenticationSuccess>`,
        ),
      )
    }
  }

  app.get('/cas/serviceValidate', { config, schema }, validate(2))
  app.get('/cas/p3/serviceValidate', { config, schema }, validate(3))
}
