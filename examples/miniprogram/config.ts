/**
 * Where the mini-program finds campusgate and the app's own forum backend. As shipped: the
 * sandbox `npm start` serves on this computer, and examples/forum beside it (README.md says how to
 * open the example in the WeChat developer tools). For a real app: campusgate's and the forum's
 * https addresses (both in the mini-program's request domain list), the mini-program's own appId,
 * and `sandbox: false`. Never the AppSecret: anything in a mini-program can be unpacked and read,
 * so the secret stays on the server, in campusgate's MESSENGER_APP_SECRETS.
 */
export const config = {
  baseUrl: 'http://127.0.0.1:3000',
  /** The forum's origin: the kit sends the session key there, and to nothing else but campusgate. */
  forumUrl: 'http://127.0.0.1:4000',
  appId: 'wx-sandbox-app',
  sandbox: true,
}
