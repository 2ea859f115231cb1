import type { Catalogue } from '../lib/locale.js'
import type { Section } from './sections.js'

/** Every text of the console's pages. The English labels are SPEC's, for tests and screen readers. */
export interface Words {
  console: string
  nav: Record<Section | 'signOut', string>
  signedInAs: string
  signIn: {
    title: string
    lead: string
    getLink: string
    button: string
    invalidTitle: string
    invalid: string
    university: string
    refusedTitle: string
    refused: string
    continueTitle: string
    continue: string
  }
  csrfTitle: string
  csrf: string
  notFoundTitle: string
  notFound: string
  overview: {
    title: string
    newUsers: string
    links: string
    active: string
    activeNote: string
    liveSessions: string
    tier2Share: string
    webhooks: string
    mail: string
    pending: string
    dead: string
    oldest: string
    backup: string
    noBackups: string
    readiness: string
    ready: string
    notReady: string
    perDay: string
    none: string
  }
  users: {
    title: string
    search: string
    button: string
    noMatch: string
    hint: string
    openId: string
    created: string
    tier: string
    none: string
    session: string
    expires: string
    noSession: string
    university: string
    notLinked: string
    subject: string
    email: string
    name: string
    linkedAt: string
    trail: string
    events: string
    actions: string
    revoke: string
    unlink: string
    erase: string
    confirm: string
    eraseNote: string
    notFound: string
    done: Record<'revoked' | 'unlinked' | 'erased' | 'nothing' | 'mismatch', string>
  }
  events: {
    title: string
    state: Record<'pending' | 'dead' | 'delivered', string>
    retry: string
    replay: string
    done: Record<'retried' | 'replayed' | 'nothing', string>
  }
  mail: {
    title: string
    state: Record<'pending' | 'dead', string>
    retry: string
    done: string
  }
  audit: {
    title: string
    user: string
    type: string
    since: string
    until: string
    filter: string
  }
  columns: Record<
    | 'id'
    | 'type'
    | 'state'
    | 'tries'
    | 'at'
    | 'actor'
    | 'user'
    | 'detail'
    | 'to'
    | 'lastError'
    | 'action',
    string
  >
  nothing: string
}

export const WORDS: Catalogue<Words> = {
  en: {
    console: 'campusgate console',
    nav: {
      overview: 'Overview',
      users: 'Users',
      events: 'Events',
      mail: 'Mail',
      audit: 'Audit',
      signOut: 'Sign out',
    },
    signedInAs: 'Signed in as',
    signIn: {
      title: 'Sign in to the console',
      lead: 'Open the sign-in address the command line printed; this page then signs you in.',
      getLink: 'On the server, run this to get an address valid for 10 minutes, for one sign-in:',
      button: 'Sign in',
      invalidTitle: 'This sign-in link is invalid or used',
      invalid:
        'A sign-in link works once, for 10 minutes. Ask for a new one with campusgate console link.',
      university: 'Sign in with your university account',
      refusedTitle: 'This account may not use the console',
      refused:
        'The university account is not one of CONSOLE_OPERATORS, or the sign-in did not complete.',
      continueTitle: 'Signed in',
      continue: 'Continue to the console',
    },
    notFoundTitle: 'No such page',
    notFound: 'The console has no page at this address. Use the navigation above.',
    csrfTitle: 'Request refused',
    csrf: 'This request did not come from a console page (@forbidden/csrf-check-failed). Go back, reload the page and try again.',
    overview: {
      title: 'Overview',
      newUsers: 'New users per day',
      links: 'University links per day',
      active: 'Active users per day',
      activeNote: 'last 30 days; a user counts once on each day it used its key',
      liveSessions: 'Live sessions',
      tier2Share: 'Share of tier 2',
      webhooks: 'Webhook events',
      mail: 'Mail',
      pending: 'pending',
      dead: 'dead',
      oldest: 'oldest waiting',
      backup: 'Newest backup',
      noBackups: 'none (BACKUP_DIR unset or PostgreSQL)',
      readiness: 'Readiness',
      ready: 'ready',
      notReady: 'not ready',
      perDay: 'last 30 days',
      none: 'none',
    },
    users: {
      title: 'Users',
      search: 'Search users',
      button: 'Search',
      noMatch: 'No user matches.',
      hint: 'An openId, a university email address or a university subject, exactly.',
      openId: 'openId',
      created: 'Created',
      tier: 'Tier',
      none: 'none (no live session)',
      session: 'Session',
      expires: 'expires',
      noSession: 'none',
      university: 'University identity',
      notLinked: 'not linked',
      subject: 'Subject',
      email: 'Email',
      name: 'Name',
      linkedAt: 'Linked',
      trail: 'Audit trail',
      events: 'Lifecycle events',
      actions: 'Actions',
      revoke: 'Revoke session',
      unlink: 'Unlink university',
      erase: 'Erase user',
      confirm: 'Type the openId to confirm',
      eraseNote:
        'Erasing deletes the user, its session, codes and mail; the audit trail keeps the ids.',
      notFound: 'No such user.',
      done: {
        revoked: 'The session is revoked.',
        unlinked: 'The university identity is unlinked.',
        erased: 'The user is erased.',
        nothing: 'Nothing to change.',
        mismatch: 'The openId typed does not match; nothing changed.',
      },
    },
    events: {
      title: 'Events',
      state: { pending: 'Pending', dead: 'Dead', delivered: 'Delivered' },
      retry: 'Retry',
      replay: 'Replay',
      done: {
        retried: 'The event is pending again.',
        replayed: 'The event will be sent again.',
        nothing: 'Nothing to change.',
      },
    },
    mail: {
      title: 'Mail',
      state: { pending: 'Pending', dead: 'Dead' },
      retry: 'Retry',
      done: 'Mail made due now: ',
    },
    audit: {
      title: 'Audit',
      user: 'openId',
      type: 'Type',
      since: 'From',
      until: 'Until',
      filter: 'Filter',
    },
    columns: {
      id: 'Id',
      type: 'Type',
      state: 'State',
      tries: 'Tries',
      at: 'When',
      actor: 'Actor',
      user: 'User',
      detail: 'Detail',
      to: 'To',
      lastError: 'Last error',
      action: 'Action',
    },
    nothing: 'Nothing here.',
  },
  'zh-CN': {
    console: 'campusgate 控制台',
    nav: {
      overview: '概览',
      users: '用户',
      events: '事件',
      mail: '邮件',
      audit: '审计',
      signOut: '退出登录',
    },
    signedInAs: '当前登录',
    signIn: {
      title: '登录控制台',
      lead: '打开命令行打印的登录地址，本页面会为你登录。',
      getLink: '在服务器上运行以下命令，获取一个 10 分钟内有效、只能使用一次的地址：',
      button: '登录',
      invalidTitle: '此登录链接无效或已被使用',
      invalid: '登录链接只能使用一次，有效期 10 分钟。请用 campusgate console link 获取新链接。',
      university: '使用大学账号登录',
      refusedTitle: '此账号不能使用控制台',
      refused: '该大学账号不在 CONSOLE_OPERATORS 中，或登录未完成。',
      continueTitle: '已登录',
      continue: '进入控制台',
    },
    notFoundTitle: '页面不存在',
    notFound: '控制台在此地址没有页面。请使用上方的导航。',
    csrfTitle: '请求被拒绝',
    csrf: '此请求并非来自控制台页面（@forbidden/csrf-check-failed）。请返回、刷新页面后重试。',
    overview: {
      title: '概览',
      newUsers: '每日新用户',
      links: '每日大学账号关联',
      active: '每日活跃用户',
      activeNote: '最近 30 天；用户在使用密钥的每一天计一次',
      liveSessions: '有效会话',
      tier2Share: '第 2 级占比',
      webhooks: 'Webhook 事件',
      mail: '邮件',
      pending: '待发送',
      dead: '已失败',
      oldest: '最久等待',
      backup: '最新备份',
      noBackups: '无（未设置 BACKUP_DIR 或使用 PostgreSQL）',
      readiness: '就绪状态',
      ready: '就绪',
      notReady: '未就绪',
      perDay: '最近 30 天',
      none: '无',
    },
    users: {
      title: '用户',
      search: '搜索用户',
      button: '搜索',
      noMatch: '没有匹配的用户。',
      hint: '输入完整的 openId、大学邮箱地址或大学账号标识。',
      openId: 'openId',
      created: '创建时间',
      tier: '级别',
      none: '无（没有有效会话）',
      session: '会话',
      expires: '到期',
      noSession: '无',
      university: '大学身份',
      notLinked: '未关联',
      subject: '标识',
      email: '邮箱',
      name: '姓名',
      linkedAt: '关联时间',
      trail: '审计记录',
      events: '生命周期事件',
      actions: '操作',
      revoke: '撤销会话',
      unlink: '解除大学关联',
      erase: '删除用户',
      confirm: '输入 openId 以确认',
      eraseNote: '删除会移除该用户及其会话、验证码和邮件；审计记录保留其 ID。',
      notFound: '没有此用户。',
      done: {
        revoked: '会话已撤销。',
        unlinked: '大学身份已解除关联。',
        erased: '用户已删除。',
        nothing: '没有需要更改的内容。',
        mismatch: '输入的 openId 不一致；未做任何更改。',
      },
    },
    events: {
      title: '事件',
      state: { pending: '待投递', dead: '已失败', delivered: '已投递' },
      retry: '重试',
      replay: '重新发送',
      done: {
        retried: '事件已重新进入待投递。',
        replayed: '事件将再次发送。',
        nothing: '没有需要更改的内容。',
      },
    },
    mail: {
      title: '邮件',
      state: { pending: '待发送', dead: '已放弃' },
      retry: '重试',
      done: '已立即安排发送的邮件：',
    },
    audit: {
      title: '审计',
      user: 'openId',
      type: '类型',
      since: '起始',
      until: '截止',
      filter: '筛选',
    },
    columns: {
      id: 'ID',
      type: '类型',
      state: '状态',
      tries: '尝试次数',
      at: '时间',
      actor: '操作者',
      user: '用户',
      detail: '详情',
      to: '收件人',
      lastError: '最近错误',
      action: '操作',
    },
    nothing: '暂无内容。',
  },
}
