/**
 * What new clients send as `appSecret` (docs/security.md, "Threat model"): the wire keeps the key
 * required, but the AppSecret itself belongs on the server, never inside a mini-program package.
 */
export const SERVER_HELD_PLACEHOLDER = 'server-held'

export interface AppSecretsOptions {
  /** MESSENGER_APP_SECRETS: appId → the secret code2session is called with, whatever the client sent. */
  held: ReadonlyMap<string, string>
  /**
   * The sandbox's apps, appId → secret: their secrets are public, so the server also knows them,
   * and a client sending the placeholder for such an app gets its secret. Any other value is
   * forwarded as for any app the server does not hold, so a wrong secret is still refused as the
   * platform refuses it.
   */
  sandboxApps?: ReadonlyMap<string, string>
}

/**
 * The secret code2session is called with for `appId`. For an app whose secret the server holds, the
 * client's value is ignored: not forwarded, compared, stored or logged. Clients of the original
 * server send the real secret there and keep working.
 */
export type AppSecretFor = (appId: string, clientValue: string) => string

export function createAppSecrets(options: AppSecretsOptions): AppSecretFor {
  const { held, sandboxApps } = options
  return (appId, clientValue) => {
    const secret = held.get(appId)
    if (secret !== undefined) return secret
    const sandboxSecret = sandboxApps?.get(appId)
    if (sandboxSecret !== undefined && clientValue === SERVER_HELD_PLACEHOLDER) return sandboxSecret
    return clientValue
  }
}
