import type { AuditEventType } from '../audit/audit.js'
import type { OperatorRole, WebhookDeliveryState } from '../db/schema.js'
import type { EventType } from '../events/service.js'
import type { MailState } from '../mail/outbox-service.js'
import type { Catalogue } from '../lib/locale.js'
import type { UserTier } from './reads.js'
import type { Section } from './sections.js'

/**
 * Every text of the console's pages, in each language; `Record`s over the unions make the
 * compiler hold each language to every section, tier, role, state and type. The English labels
 * of controls are docs/console.md's, for tests and screen readers.
 */
export interface Words {
  console: string
  skip: string
  nav: Record<Section | 'signOut', string>
  signedInAs: string
  roles: Record<OperatorRole, string>
  tiers: Record<UserTier, string>
  eventTypes: Record<EventType, string>
  auditTypes: Record<AuditEventType, string>
  deliveryStates: Record<WebhookDeliveryState, string>
  /** `3 h 12 min`. */
  age(ms: number): string
  pager: {
    previous: string
    next: string
    /** `51–57 of 57`. */
    showing(from: number, to: number, total: number): string
    pages(list: string): string
    /** The same pager again under the list (landmarks need names of their own). */
    pagesBelow(list: string): string
  }
  signIn: {
    title: string
    lead: string
    getLinkTitle: string
    getLink: string
    /** An operator and the short name of its role: `alice (admin)`. */
    as(operator: string, role: string): string
    role: Record<OperatorRole, string>
    /** The one button, shown only with a link: `Sign in as alice (admin)`. */
    signInAs(named: string): string
    /** This browser is signed in already (the page was opened from the console). */
    held(named: string): string
    /** Said above the button when signing in would switch this browser to another operator. */
    switching(held: string, next: string): string
    checking: string
    failed: string
    invalidTitle: string
    invalid: string
    university: string
    refusedTitle: string
    refused: string
    continueTitle: string
    continue: string
    limitedTitle: string
    limited(seconds: number): string
    tryAgainAt: string
  }
  csrfTitle: string
  csrf: string
  roleTitle: string
  role: string
  notFoundTitle: string
  notFound: string
  overview: {
    title: string
    users: string
    usersNote: string
    newUsers: string
    links: string
    active: string
    perDay: string
    total30: string
    activeNote: string
    liveSessions: string
    liveNote: string
    tier2Share: string
    webhooks: string
    webhooksNote: string
    noEndpoints: string
    endpoint: string
    mail: string
    mailNote: string
    pending: string
    dead: string
    oldest: string
    backup: string
    noBackups: string
    readiness: string
    ready: string
    notReady: string
    none: string
  }
  users: {
    title: string
    search: string
    button: string
    hint: string
    tier: string
    anyTier: string
    sort: string
    sortCreated: string
    sortActive: string
    openId: string
    email: string
    created: string
    lastActive: string
    never: string
    noMatch: string
    /** docs/identities.md: every way a messenger platform knows the person. */
    identities: string
    platform: string
    app: string
    appUnknown: string
    unionId: string
    university: string
    notLinked: string
    subject: string
    name: string
    linkedAt: string
    sessions: string
    device: string
    unknownDevice: string
    lastUsed: string
    expires: string
    noSessions: string
    revoke: string
    revokeAll: string
    revokeAllTitle: string
    revokeAllSessions(count: number): string
    /** The tier 2 a student loses with the last session (docs/sessions.md, "Ending a session"). */
    revokeAllTier2: string
    revokeAllTier1: string
    cancel: string
    mail: string
    mailNote: string
    mailStates: Record<MailState, string>
    noMail: string
    unlink: string
    /** docs/console.md, "Suspending a user". */
    suspend: string
    suspendReason: string
    suspendNote: string
    restore: string
    restoreNote: string
    suspended: string
    suspendedSince: string
    noReason: string
    erase: string
    confirm: string
    eraseNote: string
    download: string
    downloadNote: string
    trail: string
    events: string
    actions: string
    notFound: string
    /** After an action: what it did, and to how many things. */
    done: Record<
      | 'revoked'
      | 'revokedAll'
      | 'unlinked'
      | 'erased'
      | 'nothing'
      | 'mismatch'
      | 'suspended'
      | 'restored'
      | 'alreadySuspended'
      | 'notSuspended'
      | 'reasonTooLong',
      (count: number) => string
    >
  }
  events: {
    title: string
    endpoint: string
    anyEndpoint: string
    show: string
    event: string
    user: string
    erased: string
    deliveries: string
    retry: string
    replay: string
    retryAll: string
    retryAllNote(endpoint: string, dead: number): string
    done: Record<'retried' | 'replayed' | 'retriedAll' | 'nothing', (count: number) => string>
  }
  mail: {
    title: string
    state: Record<'pending' | 'dead', string>
    retry: string
    expired: string
    done: Record<'retried' | 'nothing', (count: number) => string>
  }
  audit: {
    title: string
    user: string
    type: string
    anyType: string
    actor: string
    ip: string
    since: string
    until: string
    filter: string
  }
  /** The link to a list's CSV: every page of what the filters show. */
  download: string
  columns: Record<
    | 'id'
    | 'type'
    | 'state'
    | 'tries'
    | 'at'
    | 'actor'
    | 'user'
    | 'ip'
    | 'detail'
    | 'to'
    | 'subject'
    | 'finished'
    | 'expires'
    | 'lastError'
    | 'action',
    string
  >
  nothing: string
}

function ageIn(units: { min: string; h: string; d: string }) {
  return (ms: number): string => {
    const minutes = Math.max(0, Math.floor(ms / 60_000))
    if (minutes < 60) return `${minutes} ${units.min}`
    const hours = Math.floor(minutes / 60)
    if (hours < 48) return `${hours} ${units.h} ${minutes % 60} ${units.min}`
    return `${Math.floor(hours / 24)} ${units.d} ${hours % 24} ${units.h}`
  }
}

const EN: Words = {
  console: 'campusgate console',
  skip: 'Skip to content',
  nav: {
    overview: 'Overview',
    users: 'Users',
    events: 'Events',
    mail: 'Mail',
    audit: 'Audit',
    signOut: 'Sign out',
  },
  signedInAs: 'Signed in as',
  roles: { admin: 'admin', viewer: 'viewer (read only)' },
  tiers: {
    none: 'none (no live session)',
    'messenger-registered': 'tier 1 (messenger-registered)',
    'university-registered': 'tier 2 (university-registered)',
  },
  eventTypes: {
    'user.created': 'user created',
    'session.started': 'session started',
    'session.ended': 'session ended',
    'university.linked': 'university linked',
    'university.unlinked': 'university unlinked',
    'user.erased': 'user erased',
    'user.suspended': 'user suspended',
    'user.restored': 'user restored',
  },
  auditTypes: {
    registration: 'registration',
    rotation: 'session ended by the device limit',
    'identity-conflict': 'unionid shared with another person (not merged)',
    'university-linked': 'university linked',
    'university-denied': 'university link declined',
    'university-failed': 'university link failed',
    'university-refused': 'university callback refused',
    'university-unlinked': 'university unlinked',
    logout: 'logout',
    expiry: 'expiry',
    erasure: 'erasure',
    suspension: 'user suspended',
    restoration: 'user restored',
    'security-configuration': 'risky setting in force',
    import: 'import',
    'console-sign-in': 'console sign-in',
    'console-sign-in-refused': 'console sign-in refused',
    'console-sign-out': 'console sign-out',
    'console-revoked': 'console sessions revoked',
    'console-action': 'console action',
    'console-action-refused': 'console action refused (role)',
    'data-export': 'data exported (access request)',
  },
  deliveryStates: { pending: 'Pending', dead: 'Dead', delivered: 'Delivered' },
  age: ageIn({ min: 'min', h: 'h', d: 'd' }),
  pager: {
    previous: 'Previous',
    next: 'Next',
    showing: (from, to, total) => (total === 0 ? 'None' : `${from}–${to} of ${total}`),
    pages: (list) => `${list}: pages`,
    pagesBelow: (list) => `${list}: pages, below the list`,
  },
  signIn: {
    title: 'Sign in to the console',
    lead: 'Open the sign-in address the command line printed: this page then shows whom it signs you in as, and signs you in when you press the button.',
    getLinkTitle: 'How to get a sign-in link',
    getLink: 'On the server, run this to get an address valid for 10 minutes, for one sign-in:',
    as: (operator, role) => `${operator} (${role})`,
    role: { admin: 'admin', viewer: 'viewer' },
    signInAs: (named) => `Sign in as ${named}`,
    held: (named) => `This browser is signed in as ${named}.`,
    switching: (held, next) =>
      `This browser is signed in as ${held}. Signing in as ${next} ends that session and switches this browser to ${next}.`,
    checking: 'Checking the sign-in link…',
    failed: 'The sign-in link could not be checked. Reload the page and try again.',
    invalidTitle: 'This sign-in link is invalid or used',
    invalid:
      'A sign-in link works once, for 10 minutes. Ask for a new one with campusgate console link.',
    university: 'Sign in with your university account',
    refusedTitle: 'This account may not use the console',
    refused:
      'The university account is not one of CONSOLE_OPERATORS, or the sign-in did not complete.',
    continueTitle: 'Signed in',
    continue: 'Continue to the console',
    limitedTitle: 'Too many failed sign-ins',
    limited: (seconds) => `Too many sign-ins from this address failed. Try again in ${seconds} s.`,
    tryAgainAt: 'Try again at',
  },
  notFoundTitle: 'No such page',
  notFound: 'The console has no page at this address. Use the navigation above.',
  csrfTitle: 'Request refused',
  csrf: 'This request did not come from a console page (@forbidden/csrf-check-failed). Go back, reload the page and try again.',
  roleTitle: 'Not allowed for your role',
  role: 'You signed in as a viewer: you can read every page but change nothing (@forbidden/operator-role). Ask for an admin link to act.',
  overview: {
    title: 'Overview',
    users: 'Users',
    usersNote: 'every user campusgate holds, whenever registered',
    newUsers: 'New users',
    links: 'University links',
    active: 'Active users',
    perDay: 'bars: one per UTC day, the last 30 days',
    total30: 'total of the last 30 days',
    activeNote:
      'bars: users who used a key that UTC day (each counts once a day); total: user-days',
    liveSessions: 'Live sessions',
    liveNote: 'sessions not yet expired or ended, now',
    tier2Share: 'Share of tier 2',
    webhooks: 'Webhook deliveries',
    webhooksNote:
      'A delivery is one event sent to one endpoint (an event for two endpoints counts twice). Dead: given up after WEBHOOK_RETRY_FOR, waiting for Retry.',
    noEndpoints: 'No deliveries yet (WEBHOOK_URL unset, or nothing happened).',
    endpoint: 'Endpoint',
    mail: 'Mail',
    mailNote:
      'Confirmation mails not yet sent. Dead: abandoned (its link expired or was ended) and never sent.',
    pending: 'waiting',
    dead: 'dead',
    oldest: 'oldest waiting',
    backup: 'Newest backup',
    noBackups: 'none (BACKUP_DIR unset or PostgreSQL)',
    readiness: 'Readiness',
    ready: 'ready',
    notReady: 'not ready',
    none: 'none',
  },
  users: {
    title: 'Users',
    search: 'Search users',
    button: 'Search',
    hint: 'Any part of an openId, unionId, university subject, university email or name, in any case; or the exact address a user asked confirmation mail for.',
    tier: 'Tier',
    anyTier: 'Every tier',
    sort: 'Order',
    sortCreated: 'Newest first',
    sortActive: 'Last active first',
    openId: 'openId',
    email: 'University email',
    created: 'Created',
    lastActive: 'Last active',
    never: 'never',
    noMatch: 'No user matches.',
    identities: 'Messenger identities',
    platform: 'Platform',
    app: 'App',
    appUnknown: 'not recorded',
    unionId: 'unionid',
    university: 'University identity',
    notLinked: 'not linked',
    subject: 'Subject',
    name: 'Name',
    linkedAt: 'Linked',
    sessions: 'Sessions',
    device: 'Device',
    unknownDevice: 'unknown device',
    lastUsed: 'Last used',
    expires: 'Expires',
    noSessions: 'No live session.',
    revoke: 'Revoke session',
    revokeAll: 'Revoke all sessions',
    revokeAllTitle: 'Revoke all sessions?',
    revokeAllSessions: (count) =>
      `${count === 1 ? 'The live session ends' : `All ${count} live sessions end`} now: the student is signed out of the app on every device.`,
    revokeAllTier2:
      'The student loses tier 2 (university-registered) until they prove membership again: their university link ends with their last session.',
    revokeAllTier1:
      'The student is at tier 1: they register again from the app; no university link is lost.',
    cancel: 'Cancel',
    mail: 'Mail history',
    mailNote:
      'The confirmation mail campusgate sent, is sending or gave up for this user: never its body or link.',
    mailStates: { queued: 'Pending', sent: 'Sent', abandoned: 'Dead (given up)' },
    noMail: 'No mail.',
    unlink: 'Unlink university',
    suspend: 'Suspend user',
    suspendReason: 'Reason for the suspension',
    suspendNote:
      'Suspending ends every session of the person now and refuses their registrations from every app until restored; nothing else is deleted. The reason (at most 500 characters) is kept in the audit trail and sent in the user.suspended event.',
    restore: 'Restore user',
    restoreNote: 'Restoring lets the person register again; their sessions stay ended.',
    suspended: 'suspended',
    suspendedSince: 'Suspended',
    noReason: 'no reason given',
    erase: 'Erase user',
    confirm: 'Type the openId to confirm',
    eraseNote:
      'Erasing deletes the user, its sessions, codes and mail; the audit trail keeps the ids.',
    download: 'Download data',
    downloadNote:
      'Everything campusgate holds about this user as JSON, as GET /user/data gives it (no key, token or mail body). The download is audited.',
    trail: 'Audit trail',
    events: 'Lifecycle events',
    actions: 'Actions',
    notFound: 'No such user.',
    done: {
      revoked: (count) => `Sessions revoked: ${count}.`,
      revokedAll: (count) => `Every session is revoked: ${count}.`,
      unlinked: (count) => `University identities unlinked: ${count}.`,
      erased: (count) => `Users erased: ${count}.`,
      nothing: () => 'Nothing to change: 0 changed.',
      mismatch: () => 'The openId typed does not match: nothing changed (0).',
      suspended: (count) => `User suspended; sessions ended: ${count}.`,
      restored: (count) => `Users restored: ${count}.`,
      alreadySuspended: () => 'The user is suspended already: nothing changed (0).',
      notSuspended: () => 'The user is not suspended: nothing changed (0).',
      reasonTooLong: () => 'The reason is longer than 500 characters: nothing changed (0).',
    },
  },
  events: {
    title: 'Events',
    endpoint: 'Endpoint',
    anyEndpoint: 'Every endpoint',
    show: 'Show',
    event: 'Event',
    user: 'User',
    erased: 'erased',
    deliveries: 'Deliveries',
    retry: 'Retry',
    replay: 'Replay',
    retryAll: 'Retry all',
    retryAllNote: (endpoint, dead) => `${dead} dead deliveries to ${endpoint}`,
    done: {
      retried: (count) => `Deliveries pending again: ${count}.`,
      replayed: (count) => `Deliveries to be sent again: ${count}.`,
      retriedAll: (count) => `Dead deliveries of the endpoint pending again: ${count}.`,
      nothing: () => 'Nothing to change: 0 changed.',
    },
  },
  mail: {
    title: 'Mail',
    state: { pending: 'Pending', dead: 'Dead' },
    retry: 'Retry',
    expired: 'link expired: it will be abandoned, not sent',
    done: {
      retried: (count) => `Mail made due now: ${count}.`,
      nothing: () => 'Nothing to change: 0 changed.',
    },
  },
  audit: {
    title: 'Audit',
    user: 'openId',
    type: 'Type',
    anyType: 'Every type',
    actor: 'Operator or actor',
    ip: 'Address (or its start)',
    since: 'From (UTC day)',
    until: 'Until (UTC day)',
    filter: 'Filter',
  },
  download: 'Download CSV (every page of what the filters show)',
  columns: {
    id: 'Id',
    type: 'Type',
    state: 'State',
    tries: 'Tries',
    at: 'When',
    actor: 'Actor',
    user: 'User',
    ip: 'Address',
    detail: 'Detail',
    to: 'To',
    subject: 'Subject',
    finished: 'Sent or given up',
    expires: 'Link expires',
    lastError: 'Last error',
    action: 'Action',
  },
  nothing: 'Nothing here.',
}

const ZH: Words = {
  console: 'campusgate 控制台',
  skip: '跳到正文',
  nav: {
    overview: '概览',
    users: '用户',
    events: '事件',
    mail: '邮件',
    audit: '审计',
    signOut: '退出登录',
  },
  signedInAs: '当前登录',
  roles: { admin: '管理员', viewer: '只读查看者' },
  tiers: {
    none: '无（没有有效会话）',
    'messenger-registered': '第 1 级（已通过通讯平台登记）',
    'university-registered': '第 2 级（已关联大学账号）',
  },
  eventTypes: {
    'user.created': '用户已创建',
    'session.started': '会话已开始',
    'session.ended': '会话已结束',
    'university.linked': '已关联大学账号',
    'university.unlinked': '已解除大学关联',
    'user.erased': '用户已删除',
    'user.suspended': '用户已停用',
    'user.restored': '用户已恢复',
  },
  auditTypes: {
    registration: '登记',
    rotation: '会话因设备数上限结束',
    'identity-conflict': 'unionid 与另一用户相同（未合并）',
    'university-linked': '已关联大学账号',
    'university-denied': '大学关联被拒绝',
    'university-failed': '大学关联失败',
    'university-refused': '大学回调被拒',
    'university-unlinked': '已解除大学关联',
    logout: '退出',
    expiry: '过期',
    erasure: '删除',
    suspension: '用户已停用',
    restoration: '用户已恢复',
    'security-configuration': '存在风险的设置',
    import: '导入',
    'console-sign-in': '控制台登录',
    'console-sign-in-refused': '控制台登录被拒',
    'console-sign-out': '控制台退出',
    'console-revoked': '控制台会话被撤销',
    'console-action': '控制台操作',
    'console-action-refused': '控制台操作被拒（角色）',
    'data-export': '数据已导出（访问请求）',
  },
  deliveryStates: { pending: '待投递', dead: '已失败', delivered: '已投递' },
  age: ageIn({ min: '分钟', h: '小时', d: '天' }),
  pager: {
    previous: '上一页',
    next: '下一页',
    showing: (from, to, total) => (total === 0 ? '无' : `第 ${from}–${to} 条，共 ${total} 条`),
    pages: (list) => `${list}：分页`,
    pagesBelow: (list) => `${list}：分页（列表下方）`,
  },
  signIn: {
    title: '登录控制台',
    lead: '打开命令行打印的登录地址：本页面会显示将以谁的身份登录，你按下按钮后才会登录。',
    getLinkTitle: '如何获取登录链接',
    getLink: '在服务器上运行以下命令，获取一个 10 分钟内有效、只能使用一次的地址：',
    as: (operator, role) => `${operator}（${role}）`,
    role: { admin: '管理员', viewer: '只读查看者' },
    signInAs: (named) => `以 ${named}身份登录`,
    held: (named) => `此浏览器当前以 ${named}身份登录。`,
    switching: (held, next) =>
      `此浏览器当前以 ${held}身份登录。以 ${next}身份登录会结束该会话，并将此浏览器切换为 ${next}。`,
    checking: '正在检查登录链接…',
    failed: '无法检查登录链接。请刷新页面后重试。',
    invalidTitle: '此登录链接无效或已被使用',
    invalid: '登录链接只能使用一次，有效期 10 分钟。请用 campusgate console link 获取新链接。',
    university: '使用大学账号登录',
    refusedTitle: '此账号不能使用控制台',
    refused: '该大学账号不在 CONSOLE_OPERATORS 中，或登录未完成。',
    continueTitle: '已登录',
    continue: '进入控制台',
    limitedTitle: '登录失败次数过多',
    limited: (seconds) => `此地址的登录失败次数过多。请在 ${seconds} 秒后重试。`,
    tryAgainAt: '可重试时间',
  },
  notFoundTitle: '页面不存在',
  notFound: '控制台在此地址没有页面。请使用上方的导航。',
  csrfTitle: '请求被拒绝',
  csrf: '此请求并非来自控制台页面（@forbidden/csrf-check-failed）。请返回、刷新页面后重试。',
  roleTitle: '你的角色不允许此操作',
  role: '你以只读查看者身份登录：可以查看所有页面，但不能做任何更改（@forbidden/operator-role）。如需操作，请索取管理员链接。',
  overview: {
    title: '概览',
    users: '用户',
    usersNote: 'campusgate 保存的全部用户，不论何时登记',
    newUsers: '新用户',
    links: '大学账号关联',
    active: '活跃用户',
    perDay: '柱形：最近 30 天，每个 UTC 日一根',
    total30: '最近 30 天合计',
    activeNote: '柱形：当天（UTC）使用过密钥的用户数（每人每天计一次）；合计为“用户·天”',
    liveSessions: '有效会话',
    liveNote: '此刻尚未过期或结束的会话',
    tier2Share: '第 2 级占比',
    webhooks: 'Webhook 投递',
    webhooksNote:
      '一次投递即一个事件发往一个端点（发往两个端点的事件计两次）。已失败：超过 WEBHOOK_RETRY_FOR 后放弃，等待“重试”。',
    noEndpoints: '尚无投递（未设置 WEBHOOK_URL，或尚未发生任何事件）。',
    endpoint: '端点',
    mail: '邮件',
    mailNote: '尚未发出的确认邮件。已失败：已放弃（链接已过期或已失效），不会发送。',
    pending: '等待中',
    dead: '已失败',
    oldest: '最久等待',
    backup: '最新备份',
    noBackups: '无（未设置 BACKUP_DIR 或使用 PostgreSQL）',
    readiness: '就绪状态',
    ready: '就绪',
    notReady: '未就绪',
    none: '无',
  },
  users: {
    title: '用户',
    search: '搜索用户',
    button: '搜索',
    hint: 'openId、unionId、大学账号标识、大学邮箱或姓名的任意部分（不区分大小写），或用户申请确认邮件时填写的完整地址。',
    tier: '级别',
    anyTier: '所有级别',
    sort: '排序',
    sortCreated: '最新创建在前',
    sortActive: '最近活跃在前',
    openId: 'openId',
    email: '大学邮箱',
    created: '创建时间',
    lastActive: '最近活跃',
    never: '从未',
    noMatch: '没有匹配的用户。',
    identities: '消息平台身份',
    platform: '平台',
    app: '应用',
    appUnknown: '未记录',
    unionId: 'unionid',
    university: '大学身份',
    notLinked: '未关联',
    subject: '标识',
    name: '姓名',
    linkedAt: '关联时间',
    sessions: '会话',
    device: '设备',
    unknownDevice: '未知设备',
    lastUsed: '最近使用',
    expires: '到期',
    noSessions: '没有有效会话。',
    revoke: '撤销会话',
    revokeAll: '撤销全部会话',
    revokeAllTitle: '撤销全部会话？',
    revokeAllSessions: (count) =>
      `${count === 1 ? '该有效会话' : `全部 ${count} 个有效会话`}将立即结束：该学生在所有设备上退出应用。`,
    revokeAllTier2:
      '该学生将失去第 2 级（已关联大学账号），直到再次证明其成员身份：大学关联随最后一个会话一同结束。',
    revokeAllTier1: '该学生处于第 1 级：从应用重新登记即可，不会失去大学关联。',
    cancel: '取消',
    mail: '邮件记录',
    mailNote: 'campusgate 为该用户已发送、正在发送或已放弃的确认邮件：不含正文或链接。',
    mailStates: { queued: '待发送', sent: '已发送', abandoned: '已放弃' },
    noMail: '没有邮件。',
    unlink: '解除大学关联',
    suspend: '停用用户',
    suspendReason: '停用原因',
    suspendNote:
      '停用会立即结束此人的全部会话，并在恢复前拒绝其从任何应用登记；不会删除其他数据。原因（最多 500 个字符）记入审计记录，并随 user.suspended 事件发送。',
    restore: '恢复用户',
    restoreNote: '恢复后此人可以重新登记；已结束的会话不会恢复。',
    suspended: '已停用',
    suspendedSince: '停用时间',
    noReason: '未填写原因',
    erase: '删除用户',
    confirm: '输入 openId 以确认',
    eraseNote: '删除会移除该用户及其会话、验证码和邮件；审计记录保留其 ID。',
    download: '下载数据',
    downloadNote:
      'campusgate 保存的关于该用户的全部数据（JSON），与 GET /user/data 相同（不含密钥、令牌或邮件正文）。下载会记入审计。',
    trail: '审计记录',
    events: '生命周期事件',
    actions: '操作',
    notFound: '没有此用户。',
    done: {
      revoked: (count) => `已撤销会话：${count} 个。`,
      revokedAll: (count) => `全部会话已撤销：${count} 个。`,
      unlinked: (count) => `已解除大学关联：${count} 个。`,
      erased: (count) => `已删除用户：${count} 个。`,
      nothing: () => '没有需要更改的内容：已更改 0 项。',
      mismatch: () => '输入的 openId 不一致：未做任何更改（0 项）。',
      suspended: (count) => `用户已停用；已结束会话：${count} 个。`,
      restored: (count) => `已恢复用户：${count} 个。`,
      alreadySuspended: () => '该用户已处于停用状态：未做任何更改（0 项）。',
      notSuspended: () => '该用户未被停用：未做任何更改（0 项）。',
      reasonTooLong: () => '原因超过 500 个字符：未做任何更改（0 项）。',
    },
  },
  events: {
    title: '事件',
    endpoint: '端点',
    anyEndpoint: '所有端点',
    show: '显示',
    event: '事件',
    user: '用户',
    erased: '已删除',
    deliveries: '投递',
    retry: '重试',
    replay: '重新发送',
    retryAll: '全部重试',
    retryAllNote: (endpoint, dead) => `${endpoint} 有 ${dead} 个已失败的投递`,
    done: {
      retried: (count) => `已重新进入待投递的投递：${count} 个。`,
      replayed: (count) => `将再次发送的投递：${count} 个。`,
      retriedAll: (count) => `该端点已失败的投递已重新进入待投递：${count} 个。`,
      nothing: () => '没有需要更改的内容：已更改 0 项。',
    },
  },
  mail: {
    title: '邮件',
    state: { pending: '待发送', dead: '已放弃' },
    retry: '重试',
    expired: '链接已过期：将被放弃，不会发送',
    done: {
      retried: (count) => `已立即安排发送的邮件：${count} 封。`,
      nothing: () => '没有需要更改的内容：已更改 0 项。',
    },
  },
  audit: {
    title: '审计',
    user: 'openId',
    type: '类型',
    anyType: '所有类型',
    actor: '操作者',
    ip: '地址（或其开头）',
    since: '起始（UTC 日期）',
    until: '截止（UTC 日期）',
    filter: '筛选',
  },
  download: '下载 CSV（筛选结果的所有页）',
  columns: {
    id: 'ID',
    type: '类型',
    state: '状态',
    tries: '尝试次数',
    at: '时间',
    actor: '操作者',
    user: '用户',
    ip: '地址',
    detail: '详情',
    to: '收件人',
    subject: '主题',
    finished: '发送或放弃时间',
    expires: '链接到期',
    lastError: '最近错误',
    action: '操作',
  },
  nothing: '暂无内容。',
}

export const WORDS: Catalogue<Words> = { en: EN, 'zh-CN': ZH }
