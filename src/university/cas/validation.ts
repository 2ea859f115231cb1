import { redact } from '../../lib/redact.js'
import type { ReleasedAttributes } from '../attributes.js'
import { childElements, parseXml, textOnly, XmlRefused } from '../xml.js'

// docs/university-providers.md, "CAS": reading a ticket validation answer (CAS protocol 2 and 3,
// `cas:serviceResponse`). Only `cas:authenticationSuccess` proves anything; everything else is a
// failure whose reason names what the server said, without the ticket.

export const CAS_NAMESPACE = 'http://www.yale.edu/tp/cas'
const MAX_USER = 256
const MAX_SERVER_TEXT = 200

export type ValidationAnswer =
  | { kind: 'success'; user: string; attributes: ReleasedAttributes }
  | { kind: 'failure'; reason: string }

/** The server's own words, one bounded line without the ticket. */
function serverText(text: string, ticket: string): string {
  const flat = redact(text, [ticket])
    // eslint-disable-next-line no-control-regex -- control characters would forge log lines
    .replace(/[\u0000-\u001f\u007f\s]+/g, ' ')
    .trim()
  return flat.length > MAX_SERVER_TEXT ? `${flat.slice(0, MAX_SERVER_TEXT)}…` : flat
}

/** Reads the body of a `serviceValidate` answer given for `ticket`. */
export function readValidationAnswer(body: string, ticket: string): ValidationAnswer {
  try {
    const root = parseXml(body, 'the validation answer').documentElement!
    if (root.namespaceURI !== CAS_NAMESPACE || root.localName !== 'serviceResponse') {
      return { kind: 'failure', reason: 'the validation answer is not a cas:serviceResponse' }
    }
    const failures = childElements(root, CAS_NAMESPACE, 'authenticationFailure')
    if (failures.length > 0) {
      const code = serverText(failures[0].getAttribute('code') ?? '', ticket) || 'none'
      const text = serverText(failures[0].textContent ?? '', ticket)
      return {
        kind: 'failure',
        reason: `the CAS server refused the ticket: code=${code}${text === '' ? '' : `, ${JSON.stringify(text)}`}`,
      }
    }
    const successes = childElements(root, CAS_NAMESPACE, 'authenticationSuccess')
    if (successes.length !== 1) {
      return { kind: 'failure', reason: 'the validation answer holds no authenticationSuccess' }
    }
    const success = successes[0]
    const users = childElements(success, CAS_NAMESPACE, 'user')
    const user = users.length === 1 ? textOnly(users[0], 'cas:user') : ''
    if (user === '' || user.length > MAX_USER) {
      return { kind: 'failure', reason: 'the validation answer names no user (cas:user)' }
    }
    const attributes = new Map<string, string[]>([['user', [user]]])
    for (const container of childElements(success, CAS_NAMESPACE, 'attributes')) {
      for (const attribute of childElements(container, CAS_NAMESPACE)) {
        // `user` is cas:user; an attribute cannot stand in for it.
        const name = attribute.localName ?? ''
        if (name === 'user' || name === '') continue
        const value = textOnly(attribute, `cas:${name}`)
        attributes.set(name, [...(attributes.get(name) ?? []), value])
      }
    }
    return { kind: 'success', user, attributes }
  } catch (error) {
    if (error instanceof XmlRefused) return { kind: 'failure', reason: error.message }
    throw error
  }
}
