// Compiled, never run: the WeChat platform object as miniprogram-api-typings describes it fits the
// kit's Platform, and the kit's request options are options wx.request takes.
import { createCampusgate, type Platform, type PlatformRequestOptions } from '../src/index.js'

const platform: Platform = wx

// Were the typings not found, `wx` would be `any` and fit anything: it must not be.
type IsAny<T> = 0 extends 1 & T ? true : false
export const typed: IsAny<typeof wx.request> = false
const options: WechatMiniprogram.RequestOption = {} as PlatformRequestOptions

export const campusgate = createCampusgate({
  baseUrl: 'https://campusgate.example.edu',
  appId: 'wx-app',
  platform,
})
export { options }
