import { type Env, fail, read } from './problems.js'
import type { UniversityAttributes, UniversityProtocol } from './types.js'

// docs/university-providers.md, "Attributes": UNIVERSITY_ATTRIBUTES maps campusgate's four
// identity fields to the attribute names a CAS server or SAML IdP releases.

/** The SAML subject that is a persistent NameID (`urn:oasis:names:tc:SAML:2.0:nameid-format:persistent`). */
export const PERSISTENT_NAME_ID = 'nameid'
/** The CAS subject that is the validation answer's `cas:user`. */
export const CAS_USER = 'user'

const FIELDS = ['subject', 'email', 'name', 'isStudent'] as const
type Field = (typeof FIELDS)[number]

/** What each protocol reads when UNIVERSITY_ATTRIBUTES says nothing of a field. */
const DEFAULTS: Readonly<Record<'cas' | 'saml', UniversityAttributes>> = {
  cas: {
    subject: [CAS_USER],
    email: ['mail'],
    name: ['displayName', 'cn'],
    isStudent: { names: ['eduPersonAffiliation'], value: 'student' },
  },
  saml: {
    subject: [
      'urn:oasis:names:tc:SAML:attribute:subject-id',
      'eduPersonPrincipalName',
      PERSISTENT_NAME_ID,
    ],
    email: ['mail'],
    name: ['displayName'],
    isStudent: { names: ['eduPersonScopedAffiliation'], value: 'student' },
  },
}

// An attribute name as CAS servers and SAML IdPs write them: a friendly name (`mail`,
// `eduPersonAffiliation`) or a URI (`urn:oid:0.9.2342.19200300.100.1.3`, `http://…/claims/upn`).
const ATTRIBUTE_NAME = /^[A-Za-z][A-Za-z0-9_.:/#-]{0,255}$/
// An `urn:oid:` name ends with its last dotted number; a colon after it starts a value.
const OID_WITH_VALUE = /^(urn:oid:[0-9]+(?:\.[0-9]+)*)(?::(.*))?$/

function names(variable: string, field: Field, spec: string): string[] {
  const alternatives = spec.split('|').map((name) => name.trim())
  for (const name of alternatives) {
    if (!ATTRIBUTE_NAME.test(name)) {
      fail(
        variable,
        `${field}=${JSON.stringify(spec.slice(0, 80))}: ${JSON.stringify(name.slice(0, 80))} is not an attribute name`,
      )
    }
  }
  return alternatives
}

/** `attribute` (a boolean-like value) or `attribute:value` (true when the attribute holds it). */
function studentRule(variable: string, spec: string): UniversityAttributes['isStudent'] {
  const oid = OID_WITH_VALUE.exec(spec)
  let attribute: string
  let value: string | undefined
  if (oid !== null) {
    attribute = oid[1]!
    value = oid[2]
  } else if (/^[a-z][a-z0-9+.-]*:\/\//i.test(spec)) {
    // A URL-shaped name (`http://…`): a value follows its last colon only after the path.
    const colon = spec.lastIndexOf(':')
    const candidate = spec.slice(colon + 1)
    ;[attribute, value] = candidate.includes('/')
      ? [spec, undefined]
      : [spec.slice(0, colon), candidate]
  } else {
    const colon = spec.indexOf(':')
    ;[attribute, value] =
      colon === -1 ? [spec, undefined] : [spec.slice(0, colon), spec.slice(colon + 1)]
  }
  if (value !== undefined && (value.trim() === '' || value.length > 128)) {
    fail(
      variable,
      `isStudent=${JSON.stringify(spec.slice(0, 80))}: the value after ":" is empty or too long`,
    )
  }
  return { names: names(variable, 'isStudent', attribute), value: value?.trim() ?? null }
}

/**
 * UNIVERSITY_ATTRIBUTES for `protocol`: a comma list of `field=attribute`, each field at most once;
 * `|` separates attributes tried in turn. Fields not named keep the protocol's defaults.
 */
export function readAttributes(
  env: Env,
  protocol: UniversityProtocol,
  variable = 'UNIVERSITY_ATTRIBUTES',
): UniversityAttributes | null {
  const raw = read(env, variable)
  if (protocol !== 'cas' && protocol !== 'saml') {
    if (raw !== undefined) fail(variable, 'is used only with UNIVERSITY_PROTOCOL=cas or saml')
    return null
  }
  const attributes: { -readonly [F in Field]: UniversityAttributes[F] } = { ...DEFAULTS[protocol] }
  if (raw === undefined) return Object.freeze(attributes)
  const seen = new Set<Field>()
  for (const item of raw.split(',').map((part) => part.trim())) {
    if (item === '') continue
    const equals = item.indexOf('=')
    const field = item.slice(0, Math.max(0, equals)).trim() as Field
    const spec = item.slice(equals + 1).trim()
    if (equals === -1 || !FIELDS.includes(field)) {
      fail(
        variable,
        `${JSON.stringify(item.slice(0, 80))} is not field=attribute with a field among ${FIELDS.join(', ')} (e.g. subject=uid,email=mail,name=cn,isStudent=eduPersonAffiliation:student)`,
      )
    }
    if (seen.has(field)) fail(variable, `${field} is named twice`)
    seen.add(field)
    if (field === 'isStudent') attributes.isStudent = studentRule(variable, spec)
    else attributes[field] = names(variable, field, spec)
  }
  return Object.freeze(attributes)
}
