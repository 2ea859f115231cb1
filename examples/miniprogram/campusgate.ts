import { createCampusgate } from 'campusgate-miniprogram'

/**
 * The app's one campusgate. The address must be in the mini-program's request domain list. No
 * AppSecret here or anywhere in the mini-program: campusgate holds it (MESSENGER_APP_SECRETS).
 */
export const campusgate = createCampusgate({
  baseUrl: 'https://campusgate.example.edu',
  appId: 'wx0123456789abcdef',
  platform: wx,
})
