// docs/university-providers.md, "Attributes": federations send attributes by their `urn:oid:`
// names (SAML2 attribute profile of eduPerson and X.500); UNIVERSITY_ATTRIBUTES may name either
// form, and both are recognised.

const OIDS: Readonly<Record<string, string>> = {
  eduPersonPrincipalName: 'urn:oid:1.3.6.1.4.1.5923.1.1.1.6',
  eduPersonScopedAffiliation: 'urn:oid:1.3.6.1.4.1.5923.1.1.1.9',
  eduPersonAffiliation: 'urn:oid:1.3.6.1.4.1.5923.1.1.1.1',
  eduPersonUniqueId: 'urn:oid:1.3.6.1.4.1.5923.1.1.1.13',
  eduPersonTargetedID: 'urn:oid:1.3.6.1.4.1.5923.1.1.1.10',
  mail: 'urn:oid:0.9.2342.19200300.100.1.3',
  uid: 'urn:oid:0.9.2342.19200300.100.1.1',
  displayName: 'urn:oid:2.16.840.1.113730.3.1.241',
  cn: 'urn:oid:2.5.4.3',
  givenName: 'urn:oid:2.5.4.42',
  sn: 'urn:oid:2.5.4.4',
  'urn:oasis:names:tc:SAML:attribute:subject-id': 'urn:oasis:names:tc:SAML:attribute:subject-id',
}

const FRIENDLY: ReadonlyMap<string, string> = new Map(
  Object.entries(OIDS).map(([friendly, oid]) => [oid, friendly]),
)

/** The other names an attribute is known by: a friendly name's `urn:oid:` name, and back. */
export function aliasesOf(name: string): readonly string[] {
  const oid = OIDS[name]
  if (oid !== undefined && oid !== name) return [oid]
  const friendly = FRIENDLY.get(name)
  return friendly !== undefined && friendly !== name ? [friendly] : []
}
