// Compiled, never run: the WeChat platform object as miniprogram-api-typings describes it fits the
// kit's Platform, and the kit's request options are options wx.request takes.
import { createCampusgate, type Platform, type PlatformRequestOptions } from '../src/index.js'

const platform: Platform = wx
const options: WechatMiniprogram.RequestOption = {} as PlatformRequestOptions

export const campusgate = createCampusgate({
  baseUrl: 'https://campusgate.example.edu',
  appId: 'wx-app',
  appSecret: 'secret',
  platform,
})
export { options }
