/**
 * Where the mini-program finds campusgate. As shipped: the sandbox `npm start` serves on this
 * computer (README.md says how to open the example in the WeChat developer tools). For a real app:
 * campusgate's https address (in the mini-program's request domain list), the mini-program's own
 * appId, and `sandbox: false`. Never the AppSecret: anything in a mini-program can be unpacked and
 * read, so the secret stays on the server, in campusgate's MESSENGER_APP_SECRETS.
 */
export const config = {
  baseUrl: 'http://127.0.0.1:3000',
  appId: 'wx-sandbox-app',
  sandbox: true,
}
