import { createCampusgate } from 'campusgate-miniprogram'
import { config } from './config.js'
import { withSandboxLogin } from './sandbox-login.js'

/**
 * The app's one campusgate, shared by its pages. No AppSecret here or anywhere in the
 * mini-program: campusgate holds it (MESSENGER_APP_SECRETS).
 */
export const campusgate = createCampusgate({
  baseUrl: config.baseUrl,
  appId: config.appId,
  platform: config.sandbox ? withSandboxLogin(wx, config.baseUrl) : wx,
  backends: [config.forumUrl],
})
