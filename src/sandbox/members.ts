import { createHash } from 'node:crypto'
import { escapeHtml } from '../lib/html.js'
import type { Catalogue, Locale } from '../lib/locale.js'

/** A university member as the sandbox identity provider knows them (UCL-API user data). */
export interface SandboxMember {
  upi: string
  full_name: string
  given_name: string
  email: string
  department: string
  is_student: boolean
}

/** The members a newcomer can sign in as, to see one identity meet two messenger accounts. */
export const SANDBOX_MEMBERS: Readonly<Record<string, SandboxMember>> = {
  ada: {
    upi: 'ALOVE01',
    full_name: 'Ada Lovelace',
    given_name: 'Ada',
    email: 'ada.lovelace.24@sandbox-university.example',
    department: 'Dept of Computer Science',
    is_student: true,
  },
  alan: {
    upi: 'ATURI02',
    full_name: 'Alan Turing',
    given_name: 'Alan',
    email: 'a.turing@sandbox-university.example',
    department: 'Dept of Mathematics',
    is_student: false,
  },
}

/** The default choice: a member of one's own, different for every messenger user. */
export const OWN_MEMBER = 'own'

/**
 * The member a choice names. `own` (or no choice) is a member derived from the request's
 * `state`, so by default every messenger user signs in as a different student.
 */
export function memberFor(choice: string, state: string): SandboxMember | null {
  if (choice === '' || choice === OWN_MEMBER) {
    const tag = createHash('sha256').update(state, 'utf8').digest('hex').slice(0, 8)
    return {
      upi: `SBX${tag.toUpperCase()}`,
      full_name: `Sandbox Student ${tag}`,
      given_name: 'Sandbox',
      email: `student.${tag}@sandbox-university.example`,
      department: 'Dept of Sandbox Studies',
      is_student: true,
    }
  }
  return SANDBOX_MEMBERS[choice] ?? null
}

const CHOICES: Catalogue<{ legend: string; own: string; student: string; staff: string }> = {
  en: { legend: 'Sign in as', own: 'A new student of my own', student: 'student', staff: 'staff' },
  'zh-CN': { legend: '登录身份', own: '我自己的新学生身份', student: '学生', staff: '教职工' },
}

/** Radio buttons choosing who signs in, for the sandbox's Allow pages. */
export function memberChoices(locale: Locale = 'en'): string {
  const text = CHOICES[locale]
  const own = `<label><input type="radio" name="member" value="${OWN_MEMBER}" checked> ${text.own}</label>`
  const named = Object.entries(SANDBOX_MEMBERS).map(
    ([key, member]) =>
      `<label><input type="radio" name="member" value="${key}"> ${escapeHtml(member.full_name)} (${escapeHtml(member.email)}, ${member.is_student ? text.student : text.staff})</label>`,
  )
  return `<fieldset><legend>${text.legend}</legend>\n${[own, ...named].join('\n')}\n</fieldset>`
}
