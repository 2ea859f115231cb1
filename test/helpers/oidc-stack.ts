import assert from 'node:assert/strict'
import type { ServiceOptions } from './service.js'
import {
  startOidcProvider,
  type OidcProvider,
  type OidcProviderOptions,
  type SignInOptions,
} from './oidc-provider.js'
import {
  followCallback,
  openLink,
  registerMessenger,
  requestConfirmationLink,
  startStack,
  type Stack,
} from './stack.js'

/** campusgate with UNIVERSITY_PROTOCOL=oidc against oidc-provider, beside the usual stack. */
export interface OidcStack extends Stack {
  oidc: OidcProvider
}

export async function startOidcStack(
  env: Record<string, string> = {},
  options: ServiceOptions & { provider?: Omit<OidcProviderOptions, 'redirectUri'> } = {},
): Promise<OidcStack> {
  let redirectUri = 'http://127.0.0.1:1/authorize/university/callback'
  const { provider, ...serviceOptions } = options
  const oidc = await startOidcProvider({ ...provider, redirectUri: () => redirectUri })
  const stack = await startStack({ ...oidc.env, ...env }, serviceOptions)
  redirectUri = `${stack.service.url}/authorize/university/callback`
  return {
    ...stack,
    oidc,
    async close() {
      await stack.close()
      await oidc.close()
    },
  }
}

/**
 * A user who asked for the email and opened its link: the 301's Location (the provider's
 * authorization request) and the attempt cookie the browser got.
 */
export async function oidcUserInBrowser(stack: OidcStack, email = 'student@example.edu') {
  const user = await registerMessenger(stack)
  const link = await requestConfirmationLink(stack, user.sessionKey, email)
  const opened = await openLink(link)
  assert.equal(opened.status, 301)
  return { ...user, link, location: opened.location, cookie: opened.cookie, opened }
}

/** The browser signs in at the provider and follows it back to the callback. */
export async function oidcSignInAndReturn(
  stack: OidcStack,
  user: { location: string; cookie: string },
  options: SignInOptions = {},
) {
  const callback = await stack.oidc.signIn(user.location, options)
  return { callback, done: await followCallback(callback, user.cookie) }
}
