import { code2sessionPlatform } from './wechat.js'

/** QQ mini-programs (QQ_API_BASE_URL): WeChat's code2session, on QQ's host. */
export const qq = code2sessionPlatform('qq', 'QQ_API_BASE_URL', 'https://api.q.qq.com')
