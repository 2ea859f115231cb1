/**
 * UNIVERSITY_EMAIL_DOMAINS: the address's domain is one of them or a subdomain of one
 * (`cs.ucl.ac.uk` passes for `ucl.ac.uk`). No list: every address passes.
 */
export function emailDomainAllowed(email: string, domains: readonly string[] | null): boolean {
  if (domains === null) return true
  const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase()
  return domains.some((allowed) => domain === allowed || domain.endsWith(`.${allowed}`))
}
