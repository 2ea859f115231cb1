import { WECHAT_API_BASE_URL, PROVIDER_TIMEOUT_MS } from './constants.js'
import type { Config } from './types.js'
import { type Env, fail, type Problems } from './problems.js'
import { httpUrl, list } from './readers.js'

/** The messenger platform's variables as given; `apiBaseUrl` is unset until the sandbox is decided. */
export interface MessengerVariables {
  readonly apiBaseUrl: string | undefined
  readonly allowedAppIds: string[] | null
  readonly appSecrets: Map<string, string>
}

/** MESSENGER_API_BASE_URL, MESSENGER_ALLOWED_APP_IDS, MESSENGER_APP_SECRETS. */
export function readMessenger(env: Env, { guard }: Problems): MessengerVariables {
  return {
    apiBaseUrl: guard(undefined, () => httpUrl(env, 'MESSENGER_API_BASE_URL')),
    allowedAppIds: list(env, 'MESSENGER_ALLOWED_APP_IDS'),
    appSecrets: guard(new Map<string, string>(), () => appSecrets(env)),
  }
}

/** The section, its API the simulated one at `sandboxUrl` (null: not simulated) when unset. */
export function messengerConfig(
  given: MessengerVariables,
  sandboxUrl: string | null,
): Config['messenger'] {
  return Object.freeze({
    apiBaseUrl: given.apiBaseUrl ?? sandboxUrl ?? WECHAT_API_BASE_URL,
    allowedAppIds: given.allowedAppIds,
    appSecrets: given.appSecrets,
    timeoutMs: PROVIDER_TIMEOUT_MS,
  })
}

/**
 * MESSENGER_APP_SECRETS: `appId:secret` items, comma-separated. An AppSecret is base62 and an appId
 * holds no colon, so the first colon splits them. Messages never repeat a secret.
 */
function appSecrets(env: Env): Map<string, string> {
  const held = new Map<string, string>()
  for (const [index, item] of (list(env, 'MESSENGER_APP_SECRETS') ?? []).entries()) {
    const colon = item.indexOf(':')
    const appId = colon < 0 ? '' : item.slice(0, colon).trim()
    const secret = colon < 0 ? '' : item.slice(colon + 1).trim()
    if (appId === '' || secret === '' || appId.length > 512 || secret.length > 512) {
      fail('MESSENGER_APP_SECRETS', `item ${index + 1} is not appId:secret`)
    }
    if (held.has(appId)) fail('MESSENGER_APP_SECRETS', `names ${JSON.stringify(appId)} twice`)
    held.set(appId, secret)
  }
  return held
}
