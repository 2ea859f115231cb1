import { createCampusgate } from 'campusgate-miniprogram'

/**
 * The app's one campusgate. The address must be in the mini-program's request domain list; the
 * appSecret is the one campusgate expects with this appId.
 */
export const campusgate = createCampusgate({
  baseUrl: 'https://campusgate.example.edu',
  appId: 'wx0123456789abcdef',
  appSecret: 'the-app-secret',
  platform: wx,
})
