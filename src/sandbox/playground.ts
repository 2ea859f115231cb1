import { escapeHtml } from '../lib/html.js'
import type { Catalogue, Locale } from '../lib/locale.js'
import { SANDBOX_MEMBERS, OWN_MEMBER } from './members.js'
import { SANDBOX_APP } from './messenger.js'

interface Step {
  action: string
  title: string
  note: string
  button: string
  /** What must exist before the button works (a key of the script's state). */
  needs?: string
}

interface Words {
  heading: string
  lead: string
  openId: string
  sessionKey: string
  tier: string
  email: string
  signInAs: string
  own: string
  allow: string
  deny: string
  steps: Step[]
  /** For the script. */
  script: Record<'redirected' | 'waiting' | 'noMail' | 'subject' | 'failed', string>
}

const WORDS: Catalogue<Words> = {
  en: {
    heading: 'Playground',
    lead: 'Walk the whole flow from this page: each button sends one real request to this server and shows it with the answer. The session key is shown masked.',
    openId: 'openId',
    sessionKey: 'Session key',
    tier: 'Tier',
    email: 'University email',
    signInAs: 'Sign in as',
    own: 'A new student of my own',
    allow: 'Allow',
    deny: 'Deny',
    steps: [
      {
        action: 'mint',
        title: 'Mint a login code',
        note: 'At the simulated messenger platform, as wx.login() hands one to the mini-program.',
        button: 'Mint a code',
      },
      {
        action: 'register',
        title: 'Register (tier 1)',
        note: 'The mini-program exchanges the code for a session key.',
        button: 'POST /register/messenger',
        needs: 'code',
      },
      {
        action: 'session',
        title: 'Who am I?',
        note: 'The session behind the key.',
        button: 'GET /session',
        needs: 'sessionKey',
      },
      {
        action: 'email',
        title: 'Ask for the confirmation email (tier 2)',
        note: 'campusgate mails a link to the university address.',
        button: 'POST /register/university',
        needs: 'sessionKey',
      },
      {
        action: 'mail',
        title: 'Read the email',
        note: 'The sandbox keeps every mail it delivers, so the link can be followed from here.',
        button: 'Open the mailbox',
        needs: 'email',
      },
      {
        action: 'link',
        title: 'Open the confirmation link',
        note: 'It sends this browser to the university with the attempt cookie.',
        button: 'Open the link',
        needs: 'link',
      },
      {
        action: 'decide',
        title: 'Allow or deny at the university',
        note: 'The simulated university signs you in and calls campusgate back.',
        button: '',
        needs: 'authorise',
      },
      {
        action: 'session-again',
        title: 'Who am I now?',
        note: 'After Allow the tier is university-registered.',
        button: 'GET /session',
        needs: 'sessionKey',
      },
      {
        action: 'logout',
        title: 'Log out',
        note: 'The key stops working at once.',
        button: 'POST /logout',
        needs: 'sessionKey',
      },
    ],
    script: {
      redirected: 'followed redirects to',
      waiting: 'Waiting for the mail…',
      noMail: 'No mail arrived.',
      subject: 'Subject:',
      failed: 'The request failed:',
    },
  },
  'zh-CN': {
    heading: '演练场',
    lead: '在本页走完整个流程：每个按钮向本服务器发送一个真实请求，并显示请求与应答。会话密钥只显示部分。',
    openId: 'openId',
    sessionKey: '会话密钥',
    tier: '级别',
    email: '大学邮箱',
    signInAs: '登录身份',
    own: '我自己的新学生身份',
    allow: '允许',
    deny: '拒绝',
    steps: [
      {
        action: 'mint',
        title: '生成登录码',
        note: '由模拟的消息平台生成，就像 wx.login() 交给小程序的那样。',
        button: '生成登录码',
      },
      {
        action: 'register',
        title: '注册（第 1 级）',
        note: '小程序用登录码换取会话密钥。',
        button: 'POST /register/messenger',
        needs: 'code',
      },
      {
        action: 'session',
        title: '我是谁？',
        note: '查看密钥对应的会话。',
        button: 'GET /session',
        needs: 'sessionKey',
      },
      {
        action: 'email',
        title: '申请确认邮件（第 2 级）',
        note: 'campusgate 向大学邮箱发送一个链接。',
        button: 'POST /register/university',
        needs: 'sessionKey',
      },
      {
        action: 'mail',
        title: '查看邮件',
        note: '沙盒会保存它发出的每封邮件，因此可以在这里打开链接。',
        button: '打开邮箱',
        needs: 'email',
      },
      {
        action: 'link',
        title: '打开确认链接',
        note: '链接带着本次尝试的 Cookie 把浏览器转到大学。',
        button: '打开链接',
        needs: 'link',
      },
      {
        action: 'decide',
        title: '在大学页面允许或拒绝',
        note: '模拟的大学为你登录，然后回调 campusgate。',
        button: '',
        needs: 'authorise',
      },
      {
        action: 'session-again',
        title: '现在我是谁？',
        note: '允许之后，级别变为 university-registered。',
        button: 'GET /session',
        needs: 'sessionKey',
      },
      {
        action: 'logout',
        title: '退出登录',
        note: '密钥立即失效。',
        button: 'POST /logout',
        needs: 'sessionKey',
      },
    ],
    script: {
      redirected: '跟随重定向到',
      waiting: '正在等待邮件…',
      noMail: '没有收到邮件。',
      subject: '主题：',
      failed: '请求失败：',
    },
  },
}

/** JSON inside a script element: nothing in it may close the element. */
function jsonBlock(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c')
}

function memberOptions(words: Words): string {
  const named = Object.entries(SANDBOX_MEMBERS).map(
    ([key, member]) => `<option value="${key}">${escapeHtml(member.full_name)}</option>`,
  )
  return [`<option value="${OWN_MEMBER}">${escapeHtml(words.own)}</option>`, ...named].join('')
}

function controls(step: Step, words: Words): string {
  const needs = step.needs === undefined ? '' : ` data-needs="${step.needs}" disabled`
  const button = (action: string, label: string, primary: boolean) =>
    `<button type="button" data-action="${action}" data-step="${step.action}"${needs}${primary ? ' class="primary"' : ''}>${escapeHtml(label)}</button>`
  if (step.action === 'email') {
    return `<label for="email" class="field">${escapeHtml(words.email)}</label>
<input type="email" id="email" value="student@sandbox-university.example" autocomplete="off">
${button('email', step.button, true)}`
  }
  if (step.action === 'decide') {
    return `<label for="member" class="field">${escapeHtml(words.signInAs)}</label>
<select id="member">${memberOptions(words)}</select>
${button('allow', words.allow, true)}${button('deny', words.deny, false)}`
  }
  return button(step.action, step.button, true)
}

/**
 * The playground: the whole flow, one button per request, each shown with its answer. Its
 * script is /_sandbox/playground.js.
 */
export function playground(locale: Locale): string {
  const words = WORDS[locale]
  const steps = words.steps
    .map(
      (step) => `<li class="step" id="step-${step.action}">
<h3>${escapeHtml(step.title)}</h3>
<p class="note">${escapeHtml(step.note)}</p>
${controls(step, words)}
<pre class="io" data-output="${step.action}" hidden></pre>
</li>`,
    )
    .join('\n')
  const strings = { ...words.script, appId: SANDBOX_APP.appId, appSecret: SANDBOX_APP.appSecret }
  return `<h2>${escapeHtml(words.heading)}</h2>
<p class="note">${escapeHtml(words.lead)}</p>
<dl class="state">
<div><dt>${escapeHtml(words.openId)}</dt><dd data-state="openId">—</dd></div>
<div><dt>${escapeHtml(words.sessionKey)}</dt><dd data-state="sessionKey">—</dd></div>
<div><dt>${escapeHtml(words.tier)}</dt><dd data-state="tier">—</dd></div>
</dl>
<ol class="steps">
${steps}
</ol>
<script type="application/json" id="playground-strings">${jsonBlock(strings)}</script>`
}
