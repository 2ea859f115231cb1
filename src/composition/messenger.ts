import { createMessengerClient, type MessengerClient } from '../messenger/client.js'
import type { Metrics } from '../operations/metrics.js'
import { sandboxApps } from '../sandbox/messenger.js'
import type { ServicesDeps } from './deps.js'

/**
 * The messenger platforms' client: the server-held secrets, and in the sandbox the public secrets
 * of the apps it simulates (docs/identities.md, "In the sandbox").
 */
export function composeMessenger(deps: ServicesDeps, metrics: Metrics): MessengerClient {
  const { config, log } = deps
  const simulated = config.sandbox.messenger
    ? [...sandboxApps(config.messenger.appPlatforms).values()]
    : []
  return createMessengerClient({
    ...config.messenger,
    appSecrets: {
      held: config.messenger.appSecrets,
      ...(simulated.length === 0
        ? {}
        : { sandboxApps: new Map(simulated.map((app) => [app.appId, app.appSecret])) }),
    },
    onCall: (answered, seconds) => metrics.providerCall('messenger', answered, seconds),
    log: log.child({ component: 'messenger' }),
  })
}
