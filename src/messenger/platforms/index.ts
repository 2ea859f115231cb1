import { douyin } from './douyin.js'
import type { MessengerPlatform } from './platform.js'
import { qq } from './qq.js'
import { wechat } from './wechat.js'

export type { MessengerPlatform, PlatformIdentity } from './platform.js'

/**
 * Every messenger platform campusgate speaks, by id: the one place that lists them
 * (docs/identities.md, "Adding a platform"). A new platform is one module and one line here.
 */
export const PLATFORMS: ReadonlyMap<string, MessengerPlatform> = new Map(
  [wechat, qq, douyin].map((platform) => [platform.id, platform]),
)

/** An appId that MESSENGER_APP_PLATFORMS does not list runs on WeChat. */
export const DEFAULT_PLATFORM = wechat.id
