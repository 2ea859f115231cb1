import type { UniversityAttributes } from '../config.js'
import type { UniversityIdentity } from './oidc-client.js'

// docs/university-providers.md, "Attributes": the identity a CAS server or SAML IdP released,
// read through UNIVERSITY_ATTRIBUTES. A value the provider did not send is absent, never guessed.

/**
 * The name UNIVERSITY_ATTRIBUTES gives a persistent SAML NameID (config/university-attributes.ts
 * reads the same word): the SAML protocol releases the NameID under it.
 */
export const PERSISTENT_NAME_ID = 'nameid'

/** The released attributes: each name (as the provider wrote it) with its values, in order. */
export type ReleasedAttributes = ReadonlyMap<string, readonly string[]>

const MAX_VALUE = 512
const TRUE_VALUES = new Set(['true', '1', 'yes', 'y', 'on'])
const FALSE_VALUES = new Set(['false', '0', 'no', 'n', 'off'])

/** The first non-empty value of the first of `names` that was released (through `alias` too). */
function first(
  released: ReleasedAttributes,
  names: readonly string[],
  alias: (name: string) => readonly string[],
): string | undefined {
  for (const name of names) {
    for (const candidate of [name, ...alias(name)]) {
      const value = released.get(candidate)?.find((item) => item.trim() !== '')
      if (value !== undefined) return value.trim().slice(0, MAX_VALUE)
    }
  }
  return undefined
}

function all(
  released: ReleasedAttributes,
  names: readonly string[],
  alias: (name: string) => readonly string[],
): string[] | undefined {
  let found: string[] | undefined
  for (const name of names) {
    for (const candidate of [name, ...alias(name)]) {
      const values = released.get(candidate)
      if (values !== undefined) found = [...(found ?? []), ...values.map((value) => value.trim())]
    }
  }
  return found
}

/**
 * `isStudent`: with a value, true when an attribute holds it (a scoped value `student@uni` counts
 * for `student`), false when the attributes were released without it; without a value, a
 * boolean-like value. Absent when the attributes were not released at all.
 */
function student(
  released: ReleasedAttributes,
  rule: UniversityAttributes['isStudent'],
  alias: (name: string) => readonly string[],
): boolean | undefined {
  const values = all(released, rule.names, alias)
  if (values === undefined || values.length === 0) return undefined
  if (rule.value !== null) {
    const wanted = rule.value.toLowerCase()
    return values.some((value) => {
      const lower = value.toLowerCase()
      return lower === wanted || lower.split('@')[0] === wanted
    })
  }
  const value = values[0].toLowerCase()
  if (TRUE_VALUES.has(value)) return true
  if (FALSE_VALUES.has(value)) return false
  return undefined
}

export interface MappedIdentity {
  identity: UniversityIdentity | null
  /** Why there is no identity: no attribute named as the subject was released. */
  missing?: string
}

/**
 * The identity the attributes name, for `issuer`. `alias` gives the other names an attribute is
 * known by (SAML: the `urn:oid:` name of a friendly name and back).
 */
export function identityFrom(
  issuer: string,
  released: ReleasedAttributes,
  rules: UniversityAttributes,
  alias: (name: string) => readonly string[] = () => [],
): MappedIdentity {
  const subject = first(released, rules.subject, alias)
  if (subject === undefined) {
    return {
      identity: null,
      missing: `no subject: none of ${rules.subject.join(', ')} was released`,
    }
  }
  const email = first(released, rules.email, alias)
  const name = first(released, rules.name, alias)
  const isStudent = student(released, rules.isStudent, alias)
  return {
    identity: {
      issuer,
      subject,
      ...(email === undefined ? {} : { email }),
      ...(name === undefined ? {} : { name }),
      ...(isStudent === undefined ? {} : { isStudent }),
    },
  }
}
