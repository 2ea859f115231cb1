/**
 * The console's sections, in the navigation's order, each with its address: one object, so the
 * navigation, the words and the guard cannot leave a section out.
 */
export const SECTION_HREF = {
  overview: '/console',
  users: '/console/users',
  events: '/console/events',
  mail: '/console/mail',
  audit: '/console/audit',
} as const

export type Section = keyof typeof SECTION_HREF

export const SECTIONS = Object.keys(SECTION_HREF) as readonly Section[]

/** The sign-in page, outside the sections: the one page open without a session. */
export const SIGN_IN_PATH = '/console/sign-in'
/** Whom a link signs in as, asked by the sign-in page's script before it offers the button. */
export const DESCRIBE_PATH = '/console/sign-in/describe'
