import type { SandboxConfig } from './types.js'
import type { Problems } from './problems.js'
import { providerVariable, type UniversityProvider } from './university.js'

/**
 * docs/decisions.md, "Sandbox": both providers are simulated only when neither is configured, and
 * never in production (production.ts requires a provider there); configuring one alone would leave
 * the other simulated, minting logins for anyone, so outside production that is refused here.
 */
export function decideSandbox(
  { report }: Problems,
  production: boolean,
  university: UniversityProvider,
  messengerApiBaseUrl: string | undefined,
): SandboxConfig {
  if (!production && university.configured && messengerApiBaseUrl === undefined) {
    report(
      'MESSENGER_API_BASE_URL',
      'is required when a university provider is configured (the sandbox runs only with no provider configured)',
    )
  }
  if (!production && !university.configured && messengerApiBaseUrl !== undefined) {
    report(
      providerVariable(university.protocol),
      'is required when MESSENGER_API_BASE_URL is set (the sandbox runs only with no provider configured)',
    )
  }
  const simulated = !production && !university.configured && messengerApiBaseUrl === undefined
  return Object.freeze({ messenger: simulated, university: simulated })
}
