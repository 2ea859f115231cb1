import { isLoopbackHost } from '../lib/loopback.js'
import type { MessengerVariables } from './messenger.js'
import { type Env, type Problems, read } from './problems.js'
import { providerVariable, type UniversityProvider } from './university.js'
import type { EndpointRule } from './webhooks.js'

// Every rule NODE_ENV=production adds, and the only place one is written. Besides these, the
// sandbox never runs in production (sandbox.ts decides it from the same flag).

export function isProduction(env: Env): boolean {
  return read(env, 'NODE_ENV') === 'production'
}

/** What the production rules judge: the sections read before them. */
export interface ProductionFacts {
  readonly publicBaseUrl: string
  readonly university: UniversityProvider
  readonly messenger: MessengerVariables
}

/**
 * The rules on the server, the providers, mail and secrets. `loadConfig` runs them once those
 * sections are read, so their lines come where they always did among the others.
 */
export function checkProduction(
  env: Env,
  { report }: Problems,
  { publicBaseUrl, university, messenger }: ProductionFacts,
): void {
  if (university.issuer !== undefined && !university.issuer.startsWith('https:')) {
    report('UNIVERSITY_ISSUER', 'must be an https: URL when NODE_ENV=production')
  }
  // docs/university-providers.md, "CAS" and "SAML": the ticket and the metadata travel only over TLS.
  if (university.casUrl !== undefined && !university.casUrl.startsWith('https:')) {
    report('UNIVERSITY_CAS_URL', 'must be an https: URL when NODE_ENV=production')
  }
  if (university.samlIdpMetadata?.startsWith('http:') === true) {
    report(
      'UNIVERSITY_SAML_IDP_METADATA',
      'must be an https: URL or a file when NODE_ENV=production (the IdP signing keys come from it)',
    )
  }
  // docs/decisions.md, "Sandbox": no sandbox in production, so a real provider is required.
  if (!university.configured) {
    report(
      providerVariable(university.protocol),
      'a university provider is required when NODE_ENV=production (no sandbox there)',
    )
  }
  if (read(env, 'DATABASE_URL') === undefined) {
    report(
      'DATABASE_URL',
      'is required when NODE_ENV=production (sqlite:PATH or postgres://…; the default ./data file is for trying it out)',
    )
  }
  if (read(env, 'SMTP_URL') === undefined) {
    report(
      'SMTP_URL',
      'is required when NODE_ENV=production (without it, confirmation links are written to files and the log)',
    )
  }
  if (read(env, 'PUBLIC_BASE_URL') === undefined || !publicBaseUrl.startsWith('https:')) {
    report(
      'PUBLIC_BASE_URL',
      'an https: URL is required when NODE_ENV=production (the attempt cookie is Secure only over https)',
    )
  }
  const allowed = messenger.allowedAppIds ?? []
  if (allowed.length === 0) {
    report('MESSENGER_ALLOWED_APP_IDS', 'is required when NODE_ENV=production')
  }
  // docs/security.md, "Threat model": in production no AppSecret comes from a client.
  const missing = allowed.filter((appId) => !messenger.appSecrets.has(appId))
  if (missing.length > 0) {
    report(
      'MESSENGER_APP_SECRETS',
      `is required when NODE_ENV=production: a server-held secret for each appId of MESSENGER_ALLOWED_APP_IDS (missing: ${missing.join(', ')})`,
    )
  }
  if (read(env, 'DATA_ENCRYPTION_KEY') === undefined) {
    report('DATA_ENCRYPTION_KEY', 'is required when NODE_ENV=production')
  }
}

/** WEBHOOK_URL: the events name users, so an endpoint off this machine must be https. */
export const productionWebhookEndpoint: EndpointRule = (url, raw) =>
  url.protocol !== 'https:' && !isLoopbackHost(url.hostname)
    ? `"${raw}" must be https: when NODE_ENV=production (or on loopback)`
    : null
