import { DEFAULT_PLATFORM, PLATFORMS } from '../messenger/platforms/index.js'
import { PROVIDER_TIMEOUT_MS } from './constants.js'
import type { Config } from './types.js'
import { type Env, fail, type Problems } from './problems.js'
import { httpUrl, list, withDefaults } from './readers.js'

/** The messenger platforms' variables as given; the base URLs are unset until the sandbox is decided. */
export interface MessengerVariables {
  /** MESSENGER_API_BASE_URL: WeChat's, and whether the operator named a messenger platform. */
  readonly apiBaseUrl: string | undefined
  /** Each platform's base URL variable as given (QQ_API_BASE_URL, DOUYIN_API_BASE_URL, …). */
  readonly apiBaseUrls: ReadonlyMap<string, string>
  readonly appPlatforms: ReadonlyMap<string, string>
  readonly allowedAppIds: string[] | null
  readonly appSecrets: Map<string, string>
  readonly linkByUnionId: boolean
}

/**
 * MESSENGER_API_BASE_URL (and each other platform's base URL variable), MESSENGER_APP_PLATFORMS,
 * MESSENGER_ALLOWED_APP_IDS, MESSENGER_APP_SECRETS, IDENTITY_LINK_BY_UNIONID.
 */
export function readMessenger(env: Env, { guard }: Problems): MessengerVariables {
  const apiBaseUrls = new Map<string, string>()
  for (const platform of PLATFORMS.values()) {
    const url = guard(undefined, () => httpUrl(env, platform.apiBaseUrlVariable))
    if (url !== undefined) apiBaseUrls.set(platform.id, url)
  }
  return {
    apiBaseUrl: apiBaseUrls.get(DEFAULT_PLATFORM),
    apiBaseUrls,
    appPlatforms: guard(new Map<string, string>(), () => appPlatforms(env)),
    allowedAppIds: list(env, 'MESSENGER_ALLOWED_APP_IDS'),
    appSecrets: guard(new Map<string, string>(), () => appSecrets(env)),
    linkByUnionId:
      withDefaults(env, { guard }).oneOf(
        'IDENTITY_LINK_BY_UNIONID',
        ['on', 'off'] as const,
        'on',
      ) === 'on',
  }
}

/**
 * The section. A platform whose variable is unset is simulated under `sandboxUrl` (null: not
 * simulated), else asked at its own host.
 */
export function messengerConfig(
  given: MessengerVariables,
  sandboxUrl: string | null,
): Config['messenger'] {
  const apiBaseUrls = new Map<string, string>()
  for (const platform of PLATFORMS.values()) {
    apiBaseUrls.set(
      platform.id,
      given.apiBaseUrls.get(platform.id) ??
        (sandboxUrl === null ? platform.defaultApiBaseUrl : sandboxApiOf(sandboxUrl, platform.id)),
    )
  }
  return Object.freeze({
    apiBaseUrls,
    appPlatforms: given.appPlatforms,
    allowedAppIds: given.allowedAppIds,
    appSecrets: given.appSecrets,
    linkByUnionId: given.linkByUnionId,
    timeoutMs: PROVIDER_TIMEOUT_MS,
  })
}

/** Where the sandbox simulates a platform's API: WeChat's at its root, the others beneath it. */
export function sandboxApiOf(sandboxUrl: string, platform: string): string {
  return platform === DEFAULT_PLATFORM ? sandboxUrl : `${sandboxUrl}/${platform}`
}

/** MESSENGER_APP_PLATFORMS: `appId:platform` items, comma-separated; each platform one campusgate speaks. */
function appPlatforms(env: Env): Map<string, string> {
  const platforms = new Map<string, string>()
  const known = [...PLATFORMS.keys()].join(', ')
  for (const [index, item] of (list(env, 'MESSENGER_APP_PLATFORMS') ?? []).entries()) {
    const colon = item.lastIndexOf(':')
    const appId = colon < 0 ? '' : item.slice(0, colon).trim()
    const platform = colon < 0 ? '' : item.slice(colon + 1).trim()
    if (appId === '' || platform === '' || appId.length > 512) {
      fail('MESSENGER_APP_PLATFORMS', `item ${index + 1} is not appId:platform`)
    }
    if (!PLATFORMS.has(platform)) {
      fail(
        'MESSENGER_APP_PLATFORMS',
        `item ${index + 1} names ${JSON.stringify(platform.slice(0, 40))}, not one of ${known}`,
      )
    }
    if (platforms.has(appId))
      fail('MESSENGER_APP_PLATFORMS', `names ${JSON.stringify(appId)} twice`)
    platforms.set(appId, platform)
  }
  return platforms
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
